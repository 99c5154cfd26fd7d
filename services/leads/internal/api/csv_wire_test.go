package api

import (
	"testing"

	"github.com/opencrm/crm/pkg/contract/envelope"
)

// TestImportResultWireType keeps the import answer this package encodes equal to
// the public wire type the OpenAPI document is generated from
// (pkg/contract/envelope): same JSON fields, same nullability.
func TestImportResultWireType(t *testing.T) {
	t.Parallel()
	for _, m := range envelope.FieldMismatches(ImportResult{}, envelope.ImportResult{}, false) {
		t.Errorf("ImportResult: %s", m)
	}
}
