package contacts_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/opencrm/crm/pkg/customfield"
	"github.com/opencrm/crm/pkg/fault"
	"github.com/opencrm/crm/pkg/idempotency"
	"github.com/opencrm/crm/services/contacts/internal/contacts"
)

// fakeStore keeps contacts in memory and knows some companies, users and
// teams: enough for the service's rules. The embedded interfaces are nil,
// so a call the test does not expect panics.
type fakeStore struct {
	contacts.Store
	contacts.IdempotentStore
	contacts.BatchStore

	companies map[int64]bool
	users     map[int64]*int64 // id → team
	stored    map[int64]contacts.Contact
	next      int64
	// listed is the last filter the store was asked to list.
	listed *contacts.Filter
	// matched is the last name and limit MatchCompanies got.
	matched []any
	// defs are the custom fields of every object.
	defs []customfield.Definition
}

// Ids the fake knows.
const (
	knownCompany = 7
	knownUser    = 2 // in team 10
	lonelyUser   = 4 // no team
	unknownID    = 999
)

func newFakeStore() *fakeStore {
	ten := int64(10)
	return &fakeStore{
		companies: map[int64]bool{knownCompany: true},
		users:     map[int64]*int64{knownUser: &ten, lonelyUser: nil},
		stored:    map[int64]contacts.Contact{},
	}
}

func newService(t *testing.T, st *fakeStore) *contacts.Service {
	t.Helper()
	svc, err := contacts.NewService(st)
	if err != nil {
		t.Fatal(err)
	}
	return svc
}

func (f *fakeStore) Definitions(context.Context, string) ([]customfield.Definition, error) {
	return f.defs, nil
}

func (f *fakeStore) CompanyExists(_ context.Context, id int64) (bool, error) {
	return f.companies[id], nil
}

func (f *fakeStore) UserExists(_ context.Context, id int64) (bool, error) {
	_, ok := f.users[id]
	return ok, nil
}

func (f *fakeStore) UserTeam(_ context.Context, id int64) (*int64, error) { return f.users[id], nil }

func (f *fakeStore) ContactExists(_ context.Context, id int64) (bool, error) {
	_, ok := f.stored[id]
	return ok, nil
}

func (f *fakeStore) GetContact(_ context.Context, id int64) (contacts.Contact, error) {
	c, ok := f.stored[id]
	if !ok {
		return c, fault.NotFound("contact")
	}
	return c, nil
}

func (f *fakeStore) CreateContact(_ context.Context, c contacts.Contact) (contacts.Contact, error) {
	f.next++
	c.ID = f.next
	f.stored[c.ID] = c
	return c, nil
}

func (f *fakeStore) CreateContactOnce(ctx context.Context, _ string, c contacts.Contact) (idempotency.Done[contacts.Contact], error) {
	c, err := f.CreateContact(ctx, c)
	return idempotency.Done[contacts.Contact]{Value: c}, err
}

func (f *fakeStore) UpdateContact(_ context.Context, id int64, apply func(*contacts.Contact) error) (contacts.Contact, error) {
	c, ok := f.stored[id]
	if !ok {
		return c, fault.NotFound("contact")
	}
	if err := apply(&c); err != nil {
		return contacts.Contact{}, err
	}
	f.stored[id] = c
	return c, nil
}

func (f *fakeStore) ListContacts(_ context.Context, filter contacts.Filter) ([]contacts.Contact, int, error) {
	f.listed = &filter
	return nil, 0, nil
}

func (f *fakeStore) ContactsByEmail(_ context.Context, email string) ([]contacts.Contact, error) {
	var out []contacts.Contact
	for _, c := range f.stored {
		if c.Email != nil && *c.Email == email {
			out = append(out, c)
		}
	}
	return out, nil
}

func (f *fakeStore) MatchCompanies(_ context.Context, name string, limit int) ([]contacts.CompanyMatch, error) {
	f.matched = []any{name, limit}
	return nil, nil
}

func (f *fakeStore) CreateCompany(_ context.Context, c contacts.Company) (contacts.Company, error) {
	f.next++
	c.ID = f.next
	return c, nil
}

// GetCompany answers every id with a stored company.
func (f *fakeStore) GetCompany(_ context.Context, id int64) (contacts.Company, error) {
	return contacts.Company{ID: id, Name: "Stored"}, nil
}

func (f *fakeStore) UpdateCompany(_ context.Context, id int64, apply func(*contacts.Company) error) (contacts.Company, error) {
	c := contacts.Company{ID: id, Name: "Stored"}
	if err := apply(&c); err != nil {
		return contacts.Company{}, err
	}
	return c, nil
}

// decode reads a write body as the edge does.
func decode[T any](t *testing.T, body map[string]any) T {
	t.Helper()
	var in T
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &in); err != nil {
		t.Fatal(err)
	}
	return in
}

// invalidFields is the fields of an invalid-input fault (validation_failed,
// a 422 at the edge) in order; nil for no error. Any other error fails t.
func invalidFields(t *testing.T, err error) []string {
	t.Helper()
	if err == nil {
		return nil
	}
	var f *fault.Error
	if !errors.As(err, &f) || f.Kind != fault.KindInvalid || f.Code != "validation_failed" {
		t.Fatalf("error %v, want an invalid-input fault", err)
	}
	fields := make([]string, 0, len(f.Fields))
	for _, fe := range f.Fields {
		fields = append(fields, fe.Field)
	}
	return fields
}
