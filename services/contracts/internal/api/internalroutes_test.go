package api_test

import (
	"testing"

	"github.com/opencrm/crm/pkg/contract/contractsapi"
	"github.com/opencrm/crm/pkg/contract/internalapi/internalapitest"
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
