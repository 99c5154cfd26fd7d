package api_test

import (
	"context"
	"net/http/httptest"
	"testing"

	"github.com/opencrm/crm/pkg/contract/contactsapi"
	"github.com/opencrm/crm/pkg/contract/contactsapi/contactsapitest"
	"github.com/opencrm/crm/pkg/contract/propertyapi"
	"github.com/opencrm/crm/pkg/customfield"
	"github.com/opencrm/crm/pkg/svcclient"
	"github.com/opencrm/crm/services/contacts/internal/store"
)

// realContacts is contactsapitest's Backend over contacts' own handlers.
type realContacts struct {
	e   *env
	url string
}

func (b realContacts) Client() *contactsapi.Client { return contactsapi.New(b.url, secret) }
func (b realContacts) Properties() *propertyapi.Client {
	return propertyapi.NewClient(svcclient.New("contacts", b.url, secret))
}

// Define stores definitions as an admin's POST /properties/{object} would
// (object names its table: contacts or companies).
func (b realContacts) Define(t *testing.T, object string, defs ...propertyapi.PropertyInput) {
	t.Helper()
	props := customfield.Store{DB: b.e.db, Stream: store.Stream}
	for _, d := range defs {
		if _, err := props.Create(context.Background(), customfield.Object{Name: object, Table: object}, d); err != nil {
			t.Fatal(err)
		}
	}
}

// TestInternalAPIKeepsTheContract runs contactsapitest's contract against
// contacts' own handlers: the fake other contexts test against passes the
// same cases, so it answers as contacts does.
func TestInternalAPIKeepsTheContract(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	srv := httptest.NewServer(e.h)
	t.Cleanup(srv.Close)
	contactsapitest.Run(t, realContacts{e, srv.URL})
}
