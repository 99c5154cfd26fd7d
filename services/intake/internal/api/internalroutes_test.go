package api_test

import (
	"testing"

	"github.com/opencrm/crm/pkg/contract/intakeapi"
	"github.com/opencrm/crm/pkg/contract/internalapi/internalapitest"
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
