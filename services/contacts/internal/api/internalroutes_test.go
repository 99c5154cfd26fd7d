package api_test

import (
	"testing"

	"github.com/opencrm/crm/pkg/contract/contactsapi"
	"github.com/opencrm/crm/pkg/contract/internalapi/internalapitest"
)

// TestInternalRoutes: contacts serves exactly the internal routes
// declared for it (contactsapi.InternalRoutes and the shared contracts'),
// the API api/released/internal/contacts.json freezes; its code spells no
// internal path of its own.
func TestInternalRoutes(t *testing.T) {
	t.Parallel()
	internalapitest.Check(t, newEnv(t).h, contactsapi.Service)
	internalapitest.CheckSources(t, "../..")
}
