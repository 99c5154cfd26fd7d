package api_test

import (
	"testing"

	"github.com/opencrm/crm/pkg/contract/identityapi"
	"github.com/opencrm/crm/pkg/contract/internalapi/internalapitest"
)

// TestInternalRoutes: identity serves exactly the internal routes
// declared for it (identityapi.InternalRoutes), the API
// api/released/internal/identity.json freezes; its code spells no
// internal path of its own.
func TestInternalRoutes(t *testing.T) {
	t.Parallel()
	internalapitest.Check(t, newEnv(t, options{}).h, identityapi.Service)
	internalapitest.CheckSources(t, "../..")
}
