package privacy

import (
	"testing"

	"github.com/opencrm/crm/pkg/contract/privacyapi"
	"github.com/opencrm/crm/pkg/history"
)

// TestOneErasedMarker: history's redaction and the contexts' write the
// same marker the contract promises.
func TestOneErasedMarker(t *testing.T) {
	t.Parallel()
	if history.Erased != privacyapi.Erased {
		t.Errorf("history writes %q, the contract promises %q", history.Erased, privacyapi.Erased)
	}
}
