package internalapitest_test

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/opencrm/crm/pkg/contract/envelope"
	"github.com/opencrm/crm/pkg/contract/internalapi/internalapitest"
	"github.com/opencrm/crm/pkg/contract/route"
	"github.com/opencrm/crm/pkg/timestamp"
)

type inner struct {
	ID   int64           `json:"id"`
	Note string          `json:"note,omitempty"`
	At   timestamp.Time  `json:"at"`
	Raw  json.RawMessage `json:"raw"`
}

type outer struct {
	inner
	Items []inner          `json:"items"`
	ByKey map[string]inner `json:"by_key"`
	Next  *inner           `json:"next"`
}

// Conforms names every departure of an answer from its declared Go type,
// at the top and inside, and takes what a type encodes itself as it is.
func TestConforms(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		json string
		typ  reflect.Type
		want []string
	}{
		{"conforming", `{"id":1,"at":"2026-01-01T00:00:00Z","raw":{"any":[1]},"items":[{"id":2,"at":"x","raw":null,"note":"n"}],"by_key":{"a":{"id":3,"at":"x","raw":1}},"next":null}`,
			reflect.TypeFor[outer](), nil},
		{"missing and undeclared", `{"id":1,"at":"x","raw":1,"items":[{"id":2,"raw":1,"extra":true}],"by_key":{},"next":{"id":4,"at":"x","raw":1},"more":1}`,
			reflect.TypeFor[outer](), []string{"items[0].at is missing", "items[0].extra is sent but not declared", "more is sent but not declared"}},
		{"kinds", `{"id":1,"at":"x","raw":1,"items":{},"by_key":[],"next":null}`,
			reflect.TypeFor[outer](), []string{"by_key is not an object", "items is not a list"}},
		{"the public envelope is not {data}", `{"success":true,"data":{"id":1,"at":"x","raw":1}}`,
			reflect.TypeFor[route.Data[inner]](), []string{"success is sent but not declared"}},
		{"an envelope", `{"success":true,"data":[{"id":1,"at":"x","raw":1}]}`,
			reflect.TypeFor[envelope.List[inner]](), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var v any
			if err := json.Unmarshal([]byte(tc.json), &v); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, internalapitest.Conforms(v, tc.typ, "")); diff != "" {
				t.Errorf("departures (-want +got):\n%s", diff)
			}
		})
	}
}
