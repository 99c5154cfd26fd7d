package api_test

import (
	"net/http/httptest"
	"testing"

	"github.com/opencrm/crm/pkg/contract/contactsapi"
	"github.com/opencrm/crm/pkg/contract/contactsapi/contactsapitest"
)

type realContacts struct{ c *contactsapi.Client }

func (b realContacts) Client() *contactsapi.Client { return b.c }

// TestInternalAPIKeepsTheContract runs contactsapitest's contract against
// contacts' own handlers: the fake other contexts test against passes the
// same cases, so it answers as contacts does.
func TestInternalAPIKeepsTheContract(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	srv := httptest.NewServer(e.h)
	t.Cleanup(srv.Close)
	contactsapitest.Run(t, realContacts{contactsapi.New(srv.URL, secret)})
}
