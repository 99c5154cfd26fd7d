package api_test

import (
	"testing"

	"github.com/opencrm/crm/pkg/contract/contractsapi"
	"github.com/opencrm/crm/pkg/contract/internalapi"
	"github.com/opencrm/crm/pkg/contract/internalapi/internalapitest"
	"github.com/opencrm/crm/pkg/contract/privacyapi"
	"github.com/opencrm/crm/pkg/contract/route"
)

// TestInternalRoutes: contracts serves exactly the internal routes
// declared for it (the shared contracts' routes: privacy), the API
// api/released/internal/contracts.json freezes; its code spells no
// internal path of its own.
func TestInternalRoutes(t *testing.T) {
	t.Parallel()
	internalapitest.Check(t, newPrivacyEnv(t).srv.Config.Handler, contractsapi.Service)
	internalapitest.CheckSources(t, "../..")
}

// TestInternalAnswers: each internal route contracts serves answers with the
// shape its declaration (hence its released document) gives.
func TestInternalAnswers(t *testing.T) {
	t.Parallel()
	h := newPrivacyEnv(t).srv.Config.Handler
	answer := func(r route.Internal, url string, body any) map[string]any {
		t.Helper()
		return internalapitest.Answer(t, h, internalSecret, r, url, body)
	}
	routes := map[string]route.Internal{}
	for _, r := range internalapi.Of(contractsapi.Service) {
		routes[r.Pattern()] = r
	}
	subject := privacyapi.Subject{Email: "ada@engines.test", ContactIDs: []int64{2}, LeadIDs: []int64{3}, DealIDs: []int64{4}}
	answer(routes[privacyapi.RouteExport], privacyapi.PathExport, subject)
	answer(routes[privacyapi.RouteErase], privacyapi.ErasurePath(7), subject)
	if len(routes) != 2 {
		t.Errorf("%d internal routes declared for contracts, this test calls 2: call the new ones", len(routes))
	}
}
