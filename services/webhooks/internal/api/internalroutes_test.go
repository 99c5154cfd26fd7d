package api_test

import (
	"testing"

	"github.com/opencrm/crm/pkg/contract/internalapi/internalapitest"
	"github.com/opencrm/crm/pkg/contract/privacyapi"
	"github.com/opencrm/crm/pkg/contract/webhooksapi"
)

// TestInternalRoutes: webhooks serves exactly the internal routes
// declared for it (the shared contracts' routes: privacy), the API
// api/released/internal/webhooks.json freezes; its code spells no
// internal path of its own.
func TestInternalRoutes(t *testing.T) {
	t.Parallel()
	internalapitest.Check(t, newPrivacyEnv(t).srv.Config.Handler, webhooksapi.Service)
	internalapitest.CheckSources(t, "../..")
}

// TestInternalAnswers: each internal route webhooks serves answers with the
// shape its declaration (hence its released document) gives.
func TestInternalAnswers(t *testing.T) {
	t.Parallel()
	h := newPrivacyEnv(t).srv.Config.Handler
	c := internalapitest.Calls(t, h, privacySecret, webhooksapi.Service)
	subject := privacyapi.Subject{Email: "ada@engines.test", ContactIDs: []int64{2}, LeadIDs: []int64{3}, DealIDs: []int64{4}}
	c.Call(privacyapi.RouteExport, privacyapi.PathExport, subject)
	c.Call(privacyapi.RouteErase, privacyapi.ErasurePath(7), subject)
}
