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

// TestEmptyStringClears: the API lets "" clear an optional field; for a
// number or a boolean that is the same as null, while a text field keeps
// the empty string for its own rules.
func TestEmptyStringClears(t *testing.T) {
	t.Parallel()
	type body struct {
		CompanyID patch.Field[int64]  `json:"company_id"`
		AutoRenew patch.Field[bool]   `json:"auto_renew"`
		Phone     patch.Field[string] `json:"phone"`
	}
	var b body
	if err := json.Unmarshal([]byte(`{"company_id":"","auto_renew":"","phone":""}`), &b); err != nil {
		t.Fatal(err)
	}
	want := body{
		CompanyID: patch.Field[int64]{Set: true, Null: true},
		AutoRenew: patch.Field[bool]{Set: true, Null: true},
		Phone:     patch.Field[string]{Set: true, Value: ""},
	}
	if diff := cmp.Diff(want, b); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if err := json.Unmarshal([]byte(`{"company_id":"7"}`), &b); err == nil {
		t.Error(`"7" for an integer field was accepted`)
	}
}

// TestFieldEncodes proves a body built by a typed client says what its
// caller set: absent fields are left out, cleared ones sent as null, and
// the encoding decodes back to the same fields.
func TestFieldEncodes(t *testing.T) {
	t.Parallel()
	type body struct {
		Name  patch.Field[string] `json:"name,omitzero"`
		Count patch.Field[int64]  `json:"count,omitzero"`
		Owner patch.Field[int64]  `json:"owner,omitzero"`
	}
	in := body{Name: patch.Of("Ada"), Owner: patch.Null[int64]()}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(`{"name":"Ada","owner":null}`, string(b)); diff != "" {
		t.Errorf("encoded (-want +got):\n%s", diff)
	}
	var out body
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(in, out); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
}
