package contacts_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/opencrm/crm/pkg/fault"
	"github.com/opencrm/crm/pkg/list"
	"github.com/opencrm/crm/services/contacts/internal/contacts"
)

// TestContactWriteRules: every contact write (create, update, the
// internal keyed create) refuses the same bodies, naming the same fields
// in order. (Moved from the HTTP tests, which keep one case per kind of
// answer.)
func TestContactWriteRules(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 101)
	tests := []struct {
		name   string
		body   map[string]any
		fields []string
	}{
		{"missing names", map[string]any{"email": "a@b.test"}, []string{"first_name", "last_name"}},
		{"blank names", map[string]any{"first_name": "  ", "last_name": ""}, []string{"first_name", "last_name"}},
		{"names too long", map[string]any{"first_name": long, "last_name": long}, []string{"first_name", "last_name"}},
		{"string too long", map[string]any{"first_name": "A", "last_name": "B", "job_title": strings.Repeat("j", 256), "address_city": strings.Repeat("c", 256)}, []string{"job_title", "address_city"}},
		{"notes too long", map[string]any{"first_name": "A", "last_name": "B", "notes": strings.Repeat("n", 100_001)}, []string{"notes"}},
		{"bad email", map[string]any{"first_name": "A", "last_name": "B", "email": "not-an-email"}, []string{"email"}},
		{"bad status", map[string]any{"first_name": "A", "last_name": "B", "status": "archived"}, []string{"status"}},
		{"unknown company", map[string]any{"first_name": "A", "last_name": "B", "company_id": unknownID}, []string{"company_id"}},
		{"negative company", map[string]any{"first_name": "A", "last_name": "B", "company_id": -1}, []string{"company_id"}},
		{"unknown assignee", map[string]any{"first_name": "A", "last_name": "B", "assigned_to": unknownID}, []string{"assigned_to"}},
		{"valid", map[string]any{"first_name": "A", "last_name": "B", "company_id": knownCompany, "assigned_to": knownUser}, nil},
	}
	ctx := context.Background()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			st := newFakeStore()
			svc := newService(t, st)
			existing, err := st.CreateContact(ctx, contacts.Contact{FirstName: "Keep", LastName: "Me", Status: contacts.StatusActive})
			if err != nil {
				t.Fatal(err)
			}
			in := decode[contacts.ContactInput](t, tt.body)
			_, createErr := svc.CreateContact(ctx, in)
			_, updateErr := svc.UpdateContact(ctx, existing.ID, in)
			_, onceErr := svc.CreateContactOnce(ctx, "key", in)
			for _, w := range []struct {
				write string
				err   error
			}{{"create", createErr}, {"update", updateErr}, {"keyed create", onceErr}} {
				if diff := cmp.Diff(tt.fields, invalidFields(t, w.err)); diff != "" {
					t.Errorf("%s: invalid fields (-want +got):\n%s", w.write, diff)
				}
			}
		})
	}
}

// TestApplyContact: how a body changes a contact: trimmed values, "" and
// null clear, an absent field keeps its value, tags are normalised, a
// cleared status is active again, read-only fields are not in the body.
func TestApplyContact(t *testing.T) {
	t.Parallel()
	s := func(v string) *string { return &v }
	n := func(v int64) *int64 { return &v }
	stored := contacts.Contact{ID: 5, FirstName: "Ada", LastName: "Lovelace", Email: s("ada@acme.test"),
		Phone: s("+1 555 0100"), Notes: s("met at expo"), Tags: s("vip,b2b"), Status: contacts.StatusActive,
		CompanyID: n(knownCompany), AssignedTo: n(knownUser)}
	created := stored
	created.ID = 0 // the store numbers it
	tests := []struct {
		name string
		from contacts.Contact
		body map[string]any
		want contacts.Contact
	}{
		{"create", contacts.Contact{}, map[string]any{
			"first_name": " Ada ", "last_name": "Lovelace", "email": "ada@acme.test", "phone": "+1 555 0100",
			"company_id": knownCompany, "tags": "vip, vip ,  b2b,", "assigned_to": knownUser, "notes": "met at expo",
			"id": 77, "company_name": "ignored", "created_at": "1999-01-01",
		}, created},
		{"update: absent keeps, null and empty clear, status set", stored, map[string]any{
			"first_name": "Augusta Ada", "last_name": "King", "phone": nil, "notes": "", "status": "inactive", "company_id": nil,
		}, contacts.Contact{ID: 5, FirstName: "Augusta Ada", LastName: "King", Email: s("ada@acme.test"),
			Tags: s("vip,b2b"), Status: contacts.StatusInactive, AssignedTo: n(knownUser)}},
		{"update: a cleared status is active", contacts.Contact{ID: 5, FirstName: "A", LastName: "B", Status: contacts.StatusInactive},
			map[string]any{"first_name": "A", "last_name": "B", "status": ""},
			contacts.Contact{ID: 5, FirstName: "A", LastName: "B", Status: contacts.StatusActive}},
		{"create: status defaults to active", contacts.Contact{}, map[string]any{"first_name": "A", "last_name": "B"},
			contacts.Contact{FirstName: "A", LastName: "B", Status: contacts.StatusActive}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := tt.from
			if err := contacts.ApplyContact(decode[contacts.ContactInput](t, tt.body), &got).Err(); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("contact (-want +got):\n%s", diff)
			}
		})
	}
}

// TestCompanyWriteRules: a company needs a name of at most 255
// characters, on create and on update.
func TestCompanyWriteRules(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		body   map[string]any
		fields []string
	}{
		{"no name", map[string]any{"domain": "x"}, []string{"name"}},
		{"empty name", map[string]any{"name": ""}, []string{"name"}},
		{"name too long", map[string]any{"name": strings.Repeat("n", 256)}, []string{"name"}},
		{"other field too long", map[string]any{"name": "Acme", "industry": strings.Repeat("i", 256)}, []string{"industry"}},
		{"valid", map[string]any{"name": "Initech", "domain": "initech.test"}, nil},
	}
	ctx := context.Background()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			svc := newService(t, newFakeStore())
			in := decode[contacts.CompanyInput](t, tt.body)
			_, createErr := svc.CreateCompany(ctx, in)
			_, updateErr := svc.UpdateCompany(ctx, 3, in)
			for _, w := range []struct {
				write string
				err   error
			}{{"create", createErr}, {"update", updateErr}} {
				if diff := cmp.Diff(tt.fields, invalidFields(t, w.err)); diff != "" {
					t.Errorf("%s: invalid fields (-want +got):\n%s", w.write, diff)
				}
			}
		})
	}
}

// TestMatchCompaniesRules: a name is required (≤255) and the limit is
// 1..50; the name is trimmed before matching.
func TestMatchCompaniesRules(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, query string
		limit       int
		fields      []string
		matched     []any
	}{
		{"trimmed", "  ACME inc. ", 5, nil, []any{"ACME inc.", 5}},
		{"no name", " ", 5, []string{"name"}, nil},
		{"name too long", strings.Repeat("n", 256), 5, []string{"name"}, nil},
		{"limit zero", "acme", 0, []string{"limit"}, nil},
		{"limit too large", "acme", contacts.MaxMatchLimit + 1, []string{"limit"}, nil},
		{"both", "", -1, []string{"name", "limit"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			st := newFakeStore()
			_, err := newService(t, st).MatchCompanies(context.Background(), tt.query, tt.limit)
			if diff := cmp.Diff(tt.fields, invalidFields(t, err)); diff != "" {
				t.Errorf("invalid fields (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.matched, st.matched); diff != "" {
				t.Errorf("store asked (-want +got):\n%s", diff)
			}
		})
	}
}

func TestContactsByEmailNeedsEmail(t *testing.T) {
	t.Parallel()
	_, err := newService(t, newFakeStore()).ContactsByEmail(context.Background(), "  ")
	if diff := cmp.Diff([]string{"email"}, invalidFields(t, err)); diff != "" {
		t.Errorf("invalid fields (-want +got):\n%s", diff)
	}
}

func TestContactExists(t *testing.T) {
	t.Parallel()
	st := newFakeStore()
	svc := newService(t, st)
	c, err := st.CreateContact(context.Background(), contacts.Contact{FirstName: "A", LastName: "B"})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		id   int64
		want error
	}{
		{"stored", c.ID, nil},
		{"unknown", unknownID, fault.NotFound("contact")},
	}
	for _, tt := range tests {
		err := svc.ContactExists(context.Background(), tt.id)
		if !errors.Is(err, tt.want) || (tt.want == nil) != (err == nil) {
			t.Errorf("%s: error %v, want %v", tt.name, err, tt.want)
		}
	}
}

// TestListScope: scope=team takes the caller's team from the read model
// (fresher than the token) and keeps the token's team for a caller the
// read model has without one; other scopes leave the filter alone.
func TestListScope(t *testing.T) {
	t.Parallel()
	ten, tokenTeam := int64(10), int64(30)
	tests := []struct {
		name     string
		scope    string
		caller   int64
		wantTeam *int64
	}{
		{"team from the read model", list.ScopeTeam, knownUser, &ten},
		{"no team in the read model: the token's", list.ScopeTeam, lonelyUser, &tokenTeam},
		{"unknown user: the token's", list.ScopeTeam, unknownID, &tokenTeam},
		{"scope me: untouched", list.ScopeMe, knownUser, &tokenTeam},
		{"no scope: untouched", "", knownUser, &tokenTeam},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			st := newFakeStore()
			f := contacts.Filter{Query: list.First(25, contacts.DefaultSort), Caller: tt.caller, CallerTeam: &tokenTeam}
			f.Scope = tt.scope
			if _, _, err := newService(t, st).ListContacts(context.Background(), f); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.wantTeam, st.listed.CallerTeam); diff != "" {
				t.Errorf("caller team (-want +got):\n%s", diff)
			}
		})
	}
}
