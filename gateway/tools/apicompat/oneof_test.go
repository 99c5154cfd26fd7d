package main

import (
	"encoding/json"
	"testing"
)

// TestNewEventBodyIsAdditive: a new event type with a body of its own adds
// a branch to the feed's Event oneOf, which a consumer ignores as it
// ignores the type (docs/releasing.md), so the gate lets it through.
func TestNewEventBodyIsAdditive(t *testing.T) {
	t.Parallel()
	b := encode(t, readReleased(t))
	var rev doc
	if err := json.Unmarshal(b, &rev); err != nil {
		t.Fatal(err)
	}
	schemas := at(t, rev, "components", "schemas").(doc)
	schemas["NewEvent"] = doc{"type": "object", "required": []any{"id", "type"}, "properties": doc{
		"id": doc{"type": "string"}, "type": doc{"type": "string", "enum": []any{"thing.happened"}}}}
	ev := schemas["Event"].(doc)
	ev["oneOf"] = append(ev["oneOf"].([]any), doc{"$ref": "#/components/schemas/NewEvent"})
	if d, ok := ev["discriminator"].(doc); ok {
		if m, ok := d["mapping"].(doc); ok {
			m["thing.happened"] = "#/components/schemas/NewEvent"
		}
	}
	got, err := Check(b, encode(t, rev), now)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) > 0 {
		t.Errorf("%d breaking change(s) reported, want none:\n%s", len(got), list(got))
	}
}
