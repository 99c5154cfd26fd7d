package patch_test

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/opencrm/crm/pkg/patch"
)

func TestField(t *testing.T) {
	t.Parallel()
	type body struct {
		Email patch.Field[string] `json:"email"`
	}
	tests := []struct {
		in   string
		want patch.Field[string]
	}{
		{`{}`, patch.Field[string]{}},
		{`{"email":null}`, patch.Field[string]{Set: true, Null: true}},
		{`{"email":"a@b.co"}`, patch.Field[string]{Set: true, Value: "a@b.co"}},
	}
	for _, tt := range tests {
		var b body
		if err := json.Unmarshal([]byte(tt.in), &b); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(tt.want, b.Email); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tt.in, diff)
		}
	}
	old := "keep"
	dst := &old
	patch.Field[string]{}.Apply(&dst)
	if dst == nil || *dst != "keep" {
		t.Error("absent field changed the value")
	}
	patch.Field[string]{Set: true, Null: true}.Apply(&dst)
	if dst != nil {
		t.Error("null did not clear")
	}
}
