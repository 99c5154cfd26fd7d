package api_test

import (
	"context"
	"net/http/httptest"
	"testing"

	"github.com/opencrm/crm/pkg/contract/dealsapi"
	"github.com/opencrm/crm/pkg/contract/dealsapi/dealsapitest"
	"github.com/opencrm/crm/pkg/contract/propertyapi"
	"github.com/opencrm/crm/pkg/customfield"
	"github.com/opencrm/crm/pkg/svcclient"
	"github.com/opencrm/crm/services/deals/internal/deals"
	"github.com/opencrm/crm/services/deals/internal/store"
)

// realDeals is dealsapitest's Backend over deals' own handlers, with the
// company, contact and lead the env's fakes know.
type realDeals struct {
	e   *env
	url string
}

func (b realDeals) Client() *dealsapi.Client { return dealsapi.New(b.url, secret) }
func (b realDeals) Properties() *propertyapi.Client {
	return propertyapi.NewClient(svcclient.New("deals", b.url, secret))
}
func (realDeals) Company() int64 { return 100 }
func (realDeals) Contact() int64 { return 500 }
func (realDeals) Lead() int64    { return knownLeads[0] }

func (b realDeals) Define(t *testing.T, defs ...propertyapi.PropertyInput) {
	t.Helper()
	props := customfield.Store{DB: b.e.db, Stream: store.Stream}
	for _, d := range defs {
		if _, err := props.Create(context.Background(), deals.Object, d); err != nil {
			t.Fatal(err)
		}
	}
}

// TestInternalAPIKeepsTheContract: the fake other contexts test against
// passes the same cases, so it answers as deals does.
func TestInternalAPIKeepsTheContract(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	srv := httptest.NewServer(e.h)
	t.Cleanup(srv.Close)
	dealsapitest.Run(t, realDeals{e, srv.URL})
}
