package contactsapitest_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/opencrm/crm/pkg/contract/contactsapi"
	"github.com/opencrm/crm/pkg/contract/contactsapi/contactsapitest"
	"github.com/opencrm/crm/pkg/contract/historyapi"
	"github.com/opencrm/crm/pkg/contract/propertyapi"
	"github.com/opencrm/crm/pkg/history"
	"github.com/opencrm/crm/pkg/svcclient"
)

const secret = "test-internal-secret-0123456789"

type fakeBackend struct {
	f   *contactsapitest.Fake
	c   *contactsapi.Client
	url string
}

func (b fakeBackend) Client() *contactsapi.Client { return b.c }
func (b fakeBackend) Properties() *propertyapi.Client {
	return propertyapi.NewClient(svcclient.New("contacts", b.url, secret))
}
func (b fakeBackend) Define(_ *testing.T, object string, defs ...propertyapi.PropertyInput) {
	b.f.Define(object, defs...)
}

func TestFakeKeepsTheContract(t *testing.T) {
	t.Parallel()
	f := contactsapitest.NewFake(secret)
	srv, c := f.Start(t)
	contactsapitest.Run(t, fakeBackend{f, c, srv.URL})
}

// TestFakeRecordsTheCaller: a create keeps who its request acted for and
// how (the headers svcclient sends from the caller's context); a replay
// keeps the first request's.
func TestFakeRecordsTheCaller(t *testing.T) {
	t.Parallel()
	f := contactsapitest.NewFake(secret)
	_, c := f.Start(t)
	seven := int64(7)
	ctx := history.WithVia(history.WithActor(context.Background(),
		historyapi.HistoryActor{Type: historyapi.ActorUser, ID: &seven, Name: "Uma User"}), historyapi.ViaQualification)
	body := json.RawMessage(`{"name":"Acme"}`)
	id, err := c.SendCompany(ctx, "k1", body)
	if err != nil {
		t.Fatal(err)
	}
	want := contactsapitest.Caller{Actor: `{"type":"user","id":7,"name":"Uma User"}`, Via: "qualification"}
	if got := f.CreatedBy(contactsapi.PathCompanies, id); got != want {
		t.Errorf("company created by %+v, want %+v", got, want)
	}
	if again, err := c.SendCompany(context.Background(), "k1", body); err != nil || again != id {
		t.Fatalf("replay: %d, %v", again, err)
	}
	if got := f.CreatedBy(contactsapi.PathCompanies, id); got != want {
		t.Errorf("after a replay: company created by %+v, want %+v", got, want)
	}
	id, err = c.SendContact(context.Background(), "k2", json.RawMessage(`{"first_name":"A","last_name":"B"}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := f.CreatedBy(contactsapi.PathContacts, id); got != (contactsapitest.Caller{}) {
		t.Errorf("contact created without a caller: %+v", got)
	}
}
