package api_test

import (
	"testing"

	"github.com/opencrm/crm/pkg/contract/dealsapi"
	"github.com/opencrm/crm/pkg/contract/internalapi/internalapitest"
	"github.com/opencrm/crm/pkg/contract/mergeapi"
	"github.com/opencrm/crm/pkg/contract/privacyapi"
	"github.com/opencrm/crm/pkg/contract/propertyapi"
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
	c := internalapitest.Calls(t, e.h, secret, dealsapi.Service)
	var stage int64
	for _, s := range e.stages() {
		stage = s.ID
	}
	deal := c.Call(dealsapi.RouteCreateDeal, dealsapi.PathDeals, map[string]any{"title": "Engines", "value": "1200.50", "stage_id": stage})
	id := int64(deal["data"].(map[string]any)["id"].(float64))
	c.Call(dealsapi.RouteStage, dealsapi.StagePath(stage), nil)
	c.Call(dealsapi.RouteDeal, dealsapi.DealPath(id), nil)
	c.Call(dealsapi.RouteMerge, dealsapi.MergePath(id), nil)
	c.Call(propertyapi.RouteInternal(propertyapi.Deals), propertyapi.PathInternal+propertyapi.Deals, nil)
	c.Call(mergeapi.RouteMove, mergeapi.MovePath(3), mergeapi.Move{Object: mergeapi.Contact, Into: 1, Merged: []int64{2}})
	subject := privacyapi.Subject{Email: "ada@engines.test", ContactIDs: []int64{2}}
	c.Call(privacyapi.RouteExport, privacyapi.PathExport, subject)
	c.Call(privacyapi.RouteErase, privacyapi.ErasurePath(7), subject)
}
