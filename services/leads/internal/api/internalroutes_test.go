package api_test

import (
	"testing"

	"github.com/opencrm/crm/pkg/contract/internalapi/internalapitest"
	"github.com/opencrm/crm/pkg/contract/leadsapi"
	"github.com/opencrm/crm/pkg/contract/mergeapi"
	"github.com/opencrm/crm/pkg/contract/privacyapi"
	"github.com/opencrm/crm/pkg/contract/propertyapi"
)

// TestInternalRoutes: leads serves exactly the internal routes declared
// for it (leadsapi.InternalRoutes and the shared contracts'), the API
// api/released/internal/leads.json freezes; its code spells no internal
// path of its own.
func TestInternalRoutes(t *testing.T) {
	t.Parallel()
	internalapitest.Check(t, newEnv(t).h, leadsapi.Service)
	internalapitest.CheckSources(t, "../..")
}

// TestInternalAnswers: each internal route leads serves answers with the
// shape its declaration (hence its released document) gives.
func TestInternalAnswers(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := internalapitest.Calls(t, e.h, secret, leadsapi.Service)
	lead := c.Call(leadsapi.RouteCreateLead, leadsapi.PathLeads, map[string]any{
		"first_name": "Grace", "last_name": "Hopper", "email": "grace@navy.test"})
	id := int64(lead["data"].(map[string]any)["id"].(float64))
	c.Call(leadsapi.RouteBatch, leadsapi.PathBatch, map[string]any{"items": []any{
		map[string]any{"key": "batch-1", "lead": map[string]any{"first_name": "Anita", "last_name": "Borg"}},
		map[string]any{"key": "batch-2", "lead": map[string]any{"first_name": ""}},
	}})
	c.Call(leadsapi.RouteLead, leadsapi.LeadPath(id), nil)
	c.Call(leadsapi.RouteDuplicates, leadsapi.PathDuplicates+"?email=GRACE@navy.test", nil)
	c.Call(leadsapi.RouteDuplicates, leadsapi.PathDuplicates+"?email=nobody@navy.test", nil)
	c.Call(propertyapi.RouteInternal(propertyapi.Leads), propertyapi.PathInternal+propertyapi.Leads, nil)
	c.Call(mergeapi.RouteMove, mergeapi.MovePath(3), mergeapi.Move{Object: mergeapi.Contact, Into: 1, Merged: []int64{2}})
	subject := privacyapi.Subject{Email: "grace@navy.test"}
	c.Call(privacyapi.RouteExport, privacyapi.PathExport, subject)
	c.Call(privacyapi.RouteErase, privacyapi.ErasurePath(7), subject)
}
