package api_test

import (
	"testing"

	"github.com/opencrm/crm/pkg/contract/internalapi/internalapitest"
	"github.com/opencrm/crm/pkg/contract/webhooksapi"
)

// TestInternalRoutes: webhooks serves exactly the internal routes
// declared for it (the shared contracts' routes: privacy), the API
// api/released/internal/webhooks.json freezes; its code spells no
// internal path of its own.
func TestInternalRoutes(t *testing.T) {
	t.Parallel()
	internalapitest.Check(t, newEnv(t).srv.Config.Handler, webhooksapi.Service)
	internalapitest.CheckSources(t, "../..")
}
