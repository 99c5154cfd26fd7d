package envelope

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestFieldMismatches(t *testing.T) {
	t.Parallel()
	type base struct {
		ID int64 `json:"id"`
	}
	type service struct {
		base
		Name   string  `json:"name"`
		Email  *string `json:"email"`
		Extra  string  `json:"extra"`
		Hidden string  `json:"-"`
	}
	type wire struct {
		ID    int64  `json:"id"`
		Name  string `json:"name,omitempty"`
		Email string `json:"email"`
		Other string `json:"other"`
	}
	tests := []struct {
		name      string
		namesOnly bool
		want      []string
	}{
		{"full", false, []string{
			"email: nullable true in the service, false in the wire type",
			"extra: sent by the service, missing from the wire type",
			"name: omitempty false in the service, true in the wire type",
			"other: in the wire type, not sent by the service",
		}},
		{"names only", true, []string{
			"extra: sent by the service, missing from the wire type",
			"other: in the wire type, not sent by the service",
		}},
	}
	for _, tc := range tests {
		got := FieldMismatches(service{}, wire{}, tc.namesOnly)
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, diff)
		}
	}
	if got := FieldMismatches(wire{}, wire{}, false); got != nil {
		t.Errorf("identical types: %v", got)
	}
}
