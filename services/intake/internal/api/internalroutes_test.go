package api_test

import (
	"testing"

	"github.com/opencrm/crm/pkg/contract/intakeapi"
	"github.com/opencrm/crm/pkg/contract/internalapi"
	"github.com/opencrm/crm/pkg/contract/internalapi/internalapitest"
	"github.com/opencrm/crm/pkg/contract/privacyapi"
	"github.com/opencrm/crm/pkg/contract/route"
)

// TestInternalRoutes: intake serves exactly the internal routes declared
// for it (the shared contracts' routes: privacy), the API
// api/released/internal/intake.json freezes; its code spells no internal
// path of its own.
func TestInternalRoutes(t *testing.T) {
	t.Parallel()
	internalapitest.Check(t, newPrivacyEnv(t).srv.Config.Handler, intakeapi.Service)
	internalapitest.CheckSources(t, "../..")
}

// TestInternalAnswers: each internal route intake serves answers with the
// shape its declaration (hence its released document) gives.
func TestInternalAnswers(t *testing.T) {
	t.Parallel()
	h := newPrivacyEnv(t).srv.Config.Handler
	answer := func(r route.Internal, url string, body any) map[string]any {
		t.Helper()
		return internalapitest.Answer(t, h, secret, r, url, body)
	}
	routes := map[string]route.Internal{}
	for _, r := range internalapi.Of(intakeapi.Service) {
		routes[r.Pattern()] = r
	}
	subject := privacyapi.Subject{Email: "ada@engines.test", ContactIDs: []int64{2}, LeadIDs: []int64{3}, DealIDs: []int64{4}}
	answer(routes[privacyapi.RouteExport], privacyapi.PathExport, subject)
	answer(routes[privacyapi.RouteErase], privacyapi.ErasurePath(7), subject)
	if len(routes) != 2 {
		t.Errorf("%d internal routes declared for intake, this test calls 2: call the new ones", len(routes))
	}
}
