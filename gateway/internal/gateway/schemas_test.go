package gateway

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/opencrm/crm/pkg/patch"
	"github.com/opencrm/crm/pkg/timestamp"
)

// TestWireTypesDocumentedAsTheirValues proves a contract type may carry the
// services' own field types (timestamp.Time, patch.Field) and still be
// documented exactly as the plain Go types they encode as.
func TestWireTypesDocumentedAsTheirValues(t *testing.T) {
	t.Parallel()
	type item struct {
		Name string `json:"name"`
	}
	type plain struct {
		At      time.Time  `json:"at"`
		Name    *string    `json:"name,omitempty" nullable:"true" maxLength:"10"`
		Owner   *int64     `json:"owner,omitempty" nullable:"true" minimum:"1"`
		Done    *bool      `json:"done,omitempty"`
		Tags    *[]string  `json:"tags,omitempty"`
		Items   *[]item    `json:"items,omitempty"`
		Expires *time.Time `json:"expires,omitempty" nullable:"true"`
	}
	type wire struct {
		At      timestamp.Time              `json:"at"`
		Name    patch.Field[string]         `json:"name,omitzero" nullable:"true" maxLength:"10"`
		Owner   patch.Field[int64]          `json:"owner,omitzero" nullable:"true" minimum:"1"`
		Done    patch.Field[bool]           `json:"done,omitzero"`
		Tags    patch.Field[[]string]       `json:"tags,omitzero"`
		Items   patch.Field[[]item]         `json:"items,omitzero"`
		Expires patch.Field[timestamp.Time] `json:"expires,omitzero" nullable:"true"`
	}
	want := newSchemaSet().inline(plain{})
	got := newSchemaSet().inline(wire{})
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("schema (-want +got):\n%s", diff)
	}
}
