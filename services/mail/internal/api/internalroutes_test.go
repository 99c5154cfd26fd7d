package api_test

import (
	"testing"

	"github.com/opencrm/crm/pkg/contract/internalapi/internalapitest"
	"github.com/opencrm/crm/pkg/contract/mailapi"
)

// TestInternalRoutes: mail serves exactly the internal routes declared
// for it (the shared contracts' routes: a merge's move, privacy), the API
// api/released/internal/mail.json freezes; its code spells no internal
// path of its own.
func TestInternalRoutes(t *testing.T) {
	t.Parallel()
	internalapitest.Check(t, newPrivacyEnv(t).srv.Config.Handler, mailapi.Service)
	internalapitest.CheckSources(t, "../..")
}
