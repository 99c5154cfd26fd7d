package api_test

import (
	"testing"

	"github.com/opencrm/crm/pkg/contract/dealsapi"
	"github.com/opencrm/crm/pkg/contract/internalapi/internalapitest"
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
