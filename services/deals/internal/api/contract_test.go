package api_test

import (
	"net/http/httptest"
	"testing"

	"github.com/opencrm/crm/pkg/contract/dealsapi"
	"github.com/opencrm/crm/pkg/contract/dealsapi/dealsapitest"
)

// realDeals is dealsapitest's Backend over deals' own handlers, with the
// company, contact and lead the env's fakes know.
type realDeals struct{ c *dealsapi.Client }

func (b realDeals) Client() *dealsapi.Client { return b.c }
func (realDeals) Company() int64             { return 100 }
func (realDeals) Contact() int64             { return 500 }
func (realDeals) Lead() int64                { return knownLeads[0] }

// TestInternalAPIKeepsTheContract: the fake other contexts test against
// passes the same cases, so it answers as deals does.
func TestInternalAPIKeepsTheContract(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	srv := httptest.NewServer(e.h)
	t.Cleanup(srv.Close)
	dealsapitest.Run(t, realDeals{dealsapi.New(srv.URL, secret)})
}
