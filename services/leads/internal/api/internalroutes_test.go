package api_test

import (
	"testing"

	"github.com/opencrm/crm/pkg/contract/internalapi/internalapitest"
	"github.com/opencrm/crm/pkg/contract/leadsapi"
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
