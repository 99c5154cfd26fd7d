package api_test

import (
	"net/http/httptest"
	"testing"

	"github.com/opencrm/crm/pkg/contract/leadsapi"
	"github.com/opencrm/crm/pkg/contract/leadsapi/leadsapitest"
)

// realLeads is leadsapitest's Backend over leads' own handlers: the fake
// other contexts test against passes these cases too.
type realLeads struct {
	e *env
	c *leadsapi.Client
}

func (b *realLeads) Client() *leadsapi.Client { return b.c }

func (b *realLeads) CreateLead(_ testing.TB, first, last, email string) int64 {
	return b.e.createLead(map[string]any{"first_name": first, "last_name": last, "email": email})
}

func TestInternalAPIKeepsTheContract(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	srv := httptest.NewServer(e.h)
	t.Cleanup(srv.Close)
	leadsapitest.Run(t, &realLeads{e: e, c: leadsapi.New(srv.URL, secret)})
}
