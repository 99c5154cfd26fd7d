package dealsapi_test

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/opencrm/crm/pkg/contract/dealsapi"
	"github.com/opencrm/crm/pkg/patch"
)

// TestDecimalJSON: a decimal is read as a number's literal or a string's
// content, never through a float; null, an absent field and "" read as
// empty; any other JSON value is kept as its text (no decimal). What is
// read is written back so it reads the same.
func TestDecimalJSON(t *testing.T) {
	t.Parallel()
	var in struct {
		A, B, C, D, E, F, G dealsapi.Decimal
		Opt                 patch.Field[dealsapi.Decimal]
	}
	body := `{"A":19.99,"B":" 19.99 ","C":null,"D":true,"E":" ","F":0.1000000000000000000001,"Opt":null}`
	if err := json.Unmarshal([]byte(body), &in); err != nil {
		t.Fatal(err)
	}
	got := []dealsapi.Decimal{in.A, in.B, in.C, in.D, in.E, in.F, in.G}
	want := []dealsapi.Decimal{"19.99", "19.99", "", "true", "", "0.1000000000000000000001", ""}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("decimals (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(patch.Null[dealsapi.Decimal](), in.Opt); diff != "" {
		t.Errorf("null optional decimal (-want +got):\n%s", diff)
	}
	for _, d := range got {
		b, err := json.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		var back dealsapi.Decimal
		if err := json.Unmarshal(b, &back); err != nil || back != d {
			t.Errorf("%q written as %s reads back as %q (%v)", d, b, back, err)
		}
	}
	if b, _ := json.Marshal(dealsapi.Decimal("1.50")); string(b) != `1.50` {
		t.Errorf("1.50 written as %s, want the literal", b)
	}
}
