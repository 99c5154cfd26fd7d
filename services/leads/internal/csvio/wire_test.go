package csvio

import (
	"testing"

	"github.com/opencrm/crm/pkg/contract/envelope"
)

// TestWireTypes keeps the import answer this package encodes equal to
// the public wire type the OpenAPI document is generated from
// (pkg/contract/envelope): same JSON fields, same nullability.
func TestWireTypes(t *testing.T) {
	t.Parallel()
	for _, m := range envelope.FieldMismatches(Result{}, envelope.ImportResult{}, false) {
		t.Errorf("ImportResult: %s", m)
	}
}
