package api_test

import (
	"testing"

	"github.com/opencrm/crm/pkg/contract/dealsapi"
	"github.com/opencrm/crm/pkg/contract/internalapi"
	"github.com/opencrm/crm/pkg/contract/internalapi/internalapitest"
	"github.com/opencrm/crm/pkg/contract/mergeapi"
	"github.com/opencrm/crm/pkg/contract/privacyapi"
	"github.com/opencrm/crm/pkg/contract/propertyapi"
	"github.com/opencrm/crm/pkg/contract/route"
)

// TestInternalRoutes: deals serves exactly the internal routes declared
// for it (dealsapi.InternalRoutes and the shared contracts'), the API
// api/released/internal/deals.json freezes; its code spells no internal
// path of its own.
func TestInternalRoutes(t *testing.T) {
	t.Parallel()
	internalapitest.Check(t, privacyEnv(t).h, dealsapi.Service)
	internalapitest.CheckSources(t, "../..")
}

// TestInternalAnswers: each internal route deals serves answers with the
// shape its declaration (hence its released document) gives.
func TestInternalAnswers(t *testing.T) {
	t.Parallel()
	e := privacyEnv(t)
	answer := func(r route.Internal, url string, body any) map[string]any {
		t.Helper()
		return internalapitest.Answer(t, e.h, secret, r, url, body)
	}
	routes := map[string]route.Internal{}
	for _, r := range internalapi.Of(dealsapi.Service) {
		routes[r.Pattern()] = r
	}
	var stage int64
	for _, s := range e.stages() {
		stage = s.ID
	}
	deal := answer(routes[dealsapi.RouteCreateDeal], dealsapi.PathDeals, map[string]any{"title": "Engines", "value": "1200.50", "stage_id": stage})
	id := int64(deal["data"].(map[string]any)["id"].(float64))
	answer(routes[dealsapi.RouteStage], dealsapi.StagePath(stage), nil)
	answer(routes[dealsapi.RouteDeal], dealsapi.DealPath(id), nil)
	answer(routes[dealsapi.RouteMerge], dealsapi.MergePath(id), nil)
	answer(routes[propertyapi.RouteInternal(propertyapi.Deals)], propertyapi.PathInternal+propertyapi.Deals, nil)
	answer(routes[mergeapi.RouteMove], mergeapi.MovePath(3), mergeapi.Move{Object: mergeapi.Contact, Into: 1, Merged: []int64{2}})
	subject := privacyapi.Subject{Email: "ada@engines.test", ContactIDs: []int64{2}}
	answer(routes[privacyapi.RouteExport], privacyapi.PathExport, subject)
	answer(routes[privacyapi.RouteErase], privacyapi.ErasurePath(7), subject)
	if len(routes) != 8 {
		t.Errorf("%d internal routes declared for deals, this test calls 8: call the new ones", len(routes))
	}
}
