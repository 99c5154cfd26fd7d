package gateway

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// eventSchemaDir holds the released JSON Schema of each domain event type
// (<type>.schema.json), refreshed at a release cut (docs/releasing.md):
//
//	UPDATE_EVENT_SCHEMAS=1 go test -run 'TestEventSchemas$' ./gateway/internal/gateway/
//
// EVENT_SCHEMA_DIR names another directory to write them to or read them
// from (.ci/release-check compares the generated ones with api/events).
var eventSchemaDir = func() string {
	if d := os.Getenv("EVENT_SCHEMA_DIR"); d != "" {
		return d
	}
	return "../../../api/events"
}()

// TestEventSchemas is the breaking-change gate of the domain events
// (docs/releasing.md): each released event schema must still describe what the
// code publishes, so a consumer of the release keeps reading it: no field
// removed or no longer always sent, no type or enum narrowed, no type
// gone. New types and new fields are additive; the release cut commits
// them.
func TestEventSchemas(t *testing.T) {
	t.Parallel()
	current, err := EventSchemas()
	if err != nil {
		t.Fatal(err)
	}
	if os.Getenv("UPDATE_EVENT_SCHEMAS") == "1" {
		writeEventSchemas(t, current)
		return
	}
	released := readEventSchemas(t)
	if len(released) == 0 {
		t.Fatalf("no released event schema in %s", eventSchemaDir)
	}
	for _, typ := range sortedKeys(released) {
		now, ok := current[typ]
		if !ok {
			t.Errorf("%s: the event type is no longer published (api/events/%s.schema.json); a type is removed only after a deprecation", typ, typ)
			continue
		}
		for _, p := range schemaBreaks(released[typ], now) {
			t.Errorf("%s: %s", typ, p)
		}
	}
	for _, typ := range sortedKeys(current) {
		if _, ok := released[typ]; !ok {
			t.Logf("%s: new event type, committed to api/events at the next release cut", typ)
		}
	}
}

// TestEventSchemasVersioned: every event type's schema carries
// schema_version, always sent.
func TestEventSchemasVersioned(t *testing.T) {
	t.Parallel()
	current, err := EventSchemas()
	if err != nil {
		t.Fatal(err)
	}
	for typ, s := range current {
		if _, ok := s["properties"].(obj)["schema_version"]; !ok || !slices.Contains(toStrings(s["required"]), "schema_version") {
			t.Errorf("%s: schema_version missing or not required", typ)
		}
	}
}

// TestSchemaBreaks: what the gate reports for edits of a released event
// schema, each naming the field.
func TestSchemaBreaks(t *testing.T) {
	t.Parallel()
	base := func() obj {
		return toObj(t, `{"type":"object","required":["id","data"],"properties":{
			"id":{"type":"integer"},
			"data":{"type":"object","required":["email","status","tags","value"],"properties":{
				"email":{"type":["string","null"]},
				"status":{"type":"string","enum":["open","won","lost"]},
				"tags":{"type":"array","items":{"type":"string"}},
				"value":{"anyOf":[{"type":"string"},{"type":"number"}]},
				"note":{"type":"string"}}}}}`)
	}
	data := func(s obj) obj { return s["properties"].(obj)["data"].(obj) }
	prop := func(s obj, name string) obj { return data(s)["properties"].(obj)[name].(obj) }
	tests := []struct {
		name string
		edit func(s obj)
		want []string
	}{
		{"unchanged", func(obj) {}, nil},
		{"a field added", func(s obj) {
			data(s)["properties"].(obj)["phone"] = obj{"type": "string"}
			data(s)["required"] = append(data(s)["required"].([]any), "phone")
		}, nil},
		{"an enum widened, a type made nullable", func(s obj) {
			prop(s, "status")["enum"] = []any{"open", "won", "lost", "abandoned"}
			prop(s, "note")["type"] = []any{"string", "null"}
		}, nil},
		{"a field removed", func(s obj) {
			delete(data(s)["properties"].(obj), "email")
		}, []string{"data.email: removed"}},
		{"an optional field removed", func(s obj) {
			delete(data(s)["properties"].(obj), "note")
		}, []string{"data.note: removed"}},
		{"a field no longer always sent", func(s obj) {
			data(s)["required"] = []any{"status", "tags", "value"}
		}, []string{"data.email: no longer always sent"}},
		{"a type narrowed", func(s obj) {
			prop(s, "email")["type"] = "string"
		}, []string{`data.email: type narrowed from ["null","string"] to ["string"]`}},
		{"a type changed", func(s obj) {
			data(s)["properties"].(obj)["tags"] = obj{"type": "string"}
		}, []string{`data.tags: type narrowed from ["array"] to ["string"]`}},
		{"an item type changed", func(s obj) {
			prop(s, "tags")["items"] = obj{"type": "integer"}
		}, []string{`data.tags[]: type narrowed from ["string"] to ["integer"]`}},
		{"an enum narrowed", func(s obj) {
			prop(s, "status")["enum"] = []any{"open", "won"}
		}, []string{`data.status: enum lost "lost"`}},
		{"an alternative dropped", func(s obj) {
			prop(s, "value")["anyOf"] = []any{obj{"type": "string"}}
		}, []string{"data.value: anyOf narrowed from 2 to 1 alternatives"}},
		{"a const changed", func(s obj) {
			s["properties"].(obj)["id"] = obj{"type": "integer", "const": 7}
		}, []string{"id: const 7 where any value was allowed"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			now := base()
			tc.edit(now)
			if diff := cmp.Diff(tc.want, schemaBreaks(base(), now)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// schemaBreaks lists how now fails a consumer that reads what old
// describes, each prefixed by the field's path.
func schemaBreaks(old, now obj) []string {
	var out []string
	compareSchema("", old, now, &out)
	return out
}

func compareSchema(path string, old, now obj, out *[]string) {
	name := strings.TrimPrefix(path, ".")
	if name == "" {
		name = "(the event)"
	}
	report := func(format string, args ...any) { *out = append(*out, name+": "+fmt.Sprintf(format, args...)) }
	if ot, nt := schemaTypes(old), schemaTypes(now); len(ot) > 0 {
		if len(nt) == 0 && now["anyOf"] == nil {
			// no type: any value, wider
		} else if len(nt) > 0 {
			for _, x := range ot {
				if !slices.Contains(nt, x) {
					j := func(v []string) string { b, _ := json.Marshal(v); return string(b) }
					report("type narrowed from %s to %s", j(ot), j(nt))
					return
				}
			}
		}
	}
	if oc, ok := old["const"]; ok {
		if nc, ok := now["const"]; !ok || fmt.Sprint(nc) != fmt.Sprint(oc) {
			if ok {
				report("const changed from %v to %v", oc, nc)
			}
		}
	} else if nc, ok := now["const"]; ok {
		report("const %v where any value was allowed", nc)
	}
	if oe, ok := old["enum"].([]any); ok {
		ne, nok := now["enum"].([]any)
		for _, v := range oe {
			if nok && !slices.ContainsFunc(ne, func(x any) bool { return fmt.Sprint(x) == fmt.Sprint(v) }) {
				b, _ := json.Marshal(v)
				report("enum lost %s", b)
			}
		}
	} else if _, ok := now["enum"]; ok {
		report("now an enum")
	}
	for _, key := range []string{"anyOf", "oneOf"} {
		oa, _ := old[key].([]any)
		na, _ := now[key].([]any)
		if len(oa) == 0 {
			continue
		}
		if len(na) < len(oa) {
			report("%s narrowed from %d to %d alternatives", key, len(oa), len(na))
			continue
		}
		for i := range oa {
			o, _ := oa[i].(obj)
			n, _ := na[i].(obj)
			if o != nil && n != nil {
				compareSchema(fmt.Sprintf("%s<%s %d>", path, key, i), o, n, out)
			}
		}
	}
	if oi, ok := old["items"].(obj); ok {
		if ni, ok := now["items"].(obj); ok {
			compareSchema(path+"[]", oi, ni, out)
		}
	}
	op, _ := old["properties"].(obj)
	np, _ := now["properties"].(obj)
	oreq, nreq := toStrings(old["required"]), toStrings(now["required"])
	for _, k := range sortedKeys(op) {
		child := path + "." + k
		nv, ok := np[k]
		if !ok {
			*out = append(*out, strings.TrimPrefix(child, ".")+": removed")
			continue
		}
		if slices.Contains(oreq, k) && !slices.Contains(nreq, k) {
			*out = append(*out, strings.TrimPrefix(child, ".")+": no longer always sent")
		}
		o, _ := op[k].(obj)
		n, _ := nv.(obj)
		if o != nil && n != nil {
			compareSchema(child, o, n, out)
		}
	}
}

// schemaTypes is a schema's type list, sorted; none when it has no type.
func schemaTypes(s obj) []string {
	var ts []string
	switch t := s["type"].(type) {
	case string:
		ts = []string{t}
	case []any:
		ts = toStrings(t)
	}
	sort.Strings(ts)
	return ts
}

func toStrings(v any) []string {
	var out []string
	switch t := v.(type) {
	case []any:
		for _, x := range t {
			if s, ok := x.(string); ok {
				out = append(out, s)
			}
		}
	case []string:
		out = append(out, t...)
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func toObj(t *testing.T, s string) obj {
	t.Helper()
	var o obj
	if err := json.Unmarshal([]byte(s), &o); err != nil {
		t.Fatal(err)
	}
	return o
}

func readEventSchemas(t *testing.T) map[string]obj {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(eventSchemaDir, "*.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]obj{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out[strings.TrimSuffix(filepath.Base(f), ".schema.json")] = toObj(t, string(b))
	}
	return out
}

func writeEventSchemas(t *testing.T, schemas map[string]obj) {
	t.Helper()
	if err := os.MkdirAll(eventSchemaDir, 0o755); err != nil {
		t.Fatal(err)
	}
	for typ, s := range schemas {
		// Through JSON values, so keys are sorted like every other file.
		b, err := json.MarshalIndent(toObj(t, mustJSON(t, s)), "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(eventSchemaDir, typ+".schema.json"), append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("wrote %d event schemas to %s", len(schemas), eventSchemaDir)
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
