package envelope

import (
	"fmt"
	"reflect"
	"sort"
	"strings"
)

// FieldMismatches compares the JSON fields of a service's own struct with
// the public wire type the OpenAPI document is generated from, so a
// service test fails when the two drift: a field only on one side, or one
// side nullable (a pointer) or omitted when empty and the other not.
// Both arguments are values of struct types; embedded structs are
// flattened as encoding/json does. namesOnly compares names alone, for
// request types whose service side uses patch fields.
func FieldMismatches(service, wire any, namesOnly bool) []string {
	s, w := jsonFields(reflect.TypeOf(service)), jsonFields(reflect.TypeOf(wire))
	var out []string
	for name, sf := range s {
		wf, ok := w[name]
		switch {
		case !ok:
			out = append(out, fmt.Sprintf("%s: sent by the service, missing from the wire type", name))
		case namesOnly:
		case sf.nullable != wf.nullable:
			out = append(out, fmt.Sprintf("%s: nullable %v in the service, %v in the wire type", name, sf.nullable, wf.nullable))
		case sf.omitempty != wf.omitempty:
			out = append(out, fmt.Sprintf("%s: omitempty %v in the service, %v in the wire type", name, sf.omitempty, wf.omitempty))
		}
	}
	for name := range w {
		if _, ok := s[name]; !ok {
			out = append(out, fmt.Sprintf("%s: in the wire type, not sent by the service", name))
		}
	}
	sort.Strings(out)
	return out
}

type jsonField struct{ nullable, omitempty bool }

func jsonFields(t reflect.Type) map[string]jsonField {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	out := map[string]jsonField{}
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" || (!f.IsExported() && !f.Anonymous) || f.Name == "_" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			for k, v := range jsonFields(f.Type) {
				out[k] = v
			}
			continue
		}
		if name == "" {
			name = f.Name
		}
		out[name] = jsonField{nullable: f.Type.Kind() == reflect.Pointer, omitempty: strings.Contains(opts, "omitempty")}
	}
	return out
}
