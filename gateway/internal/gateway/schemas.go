package gateway

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/swaggest/jsonschema-go"

	"github.com/opencrm/crm/pkg/patch"
	"github.com/opencrm/crm/pkg/timestamp"
)

// schemaSet reflects Go types into components.schemas, named after the Go
// type (envelopes after their record: ContactPage, DealRecord).
type schemaSet struct {
	r    jsonschema.Reflector
	defs map[string]jsonschema.Schema
	// mapped holds the types mapWireTypes has walked.
	mapped map[reflect.Type]bool
	err    error
}

func newSchemaSet() *schemaSet {
	s := &schemaSet{defs: map[string]jsonschema.Schema{}, mapped: map[reflect.Type]bool{}}
	s.r.AddTypeMapping(timestamp.Time{}, time.Time{})
	return s
}

// mapWireTypes lets the services encode and decode the contract types
// themselves: an update field (patch.Field[T]) is documented as its T —
// it may be null, as a pointer may — just as
// timestamp.Time is documented as the date-time it is.
func (s *schemaSet) mapWireTypes(t reflect.Type) {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Array || t.Kind() == reflect.Map {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || s.mapped[t] {
		return
	}
	s.mapped[t] = true
	if isPatchField(t) {
		value, _ := t.FieldByName("Value")
		vt := value.Type
		if vt == reflect.TypeFor[timestamp.Time]() {
			vt = reflect.TypeFor[time.Time]() // mappings do not chain
		}
		s.r.AddTypeMapping(reflect.Zero(t).Interface(), reflect.Zero(reflect.PointerTo(vt)).Interface())
		s.mapWireTypes(vt)
		return
	}
	for i := range t.NumField() {
		s.mapWireTypes(t.Field(i).Type)
	}
}

var patchPkg = reflect.TypeFor[patch.Field[int]]().PkgPath()

func isPatchField(t reflect.Type) bool {
	return t.PkgPath() == patchPkg && strings.HasPrefix(t.Name(), "Field[")
}

// defName names a type's schema: Contact, ContactPage, Problem, and
// for a generic of a generic the names read inside out:
// List[DuplicatePair[Contact]] is ContactDuplicatePairList.
func defName(t reflect.Type, _ string) string { return genericName(t.Name()) }

// genericName is a Go type name (type arguments spelled with their
// package paths) without paths and brackets, type arguments first.
func genericName(name string) string {
	i := strings.IndexByte(name, '[')
	if i < 0 {
		return name[strings.LastIndexByte(name, '.')+1:]
	}
	outer := name[:i]
	return genericName(name[i+1:len(name)-1]) + outer[strings.LastIndexByte(outer, '.')+1:]
}

// ref returns a $ref to the schema of v, reflecting it on first use.
func (s *schemaSet) ref(v any) obj {
	s.mapWireTypes(reflect.TypeOf(v))
	sch, err := s.r.Reflect(v,
		jsonschema.RootRef,
		jsonschema.DefinitionsPrefix("#/components/schemas/"),
		jsonschema.InterceptDefName(defName),
		jsonschema.CollectDefinitions(func(name string, sc jsonschema.Schema) { s.defs[name] = sc }),
		jsonschema.InterceptProp(interceptProp),
	)
	if err != nil && s.err == nil {
		s.err = fmt.Errorf("reflect %T: %w", v, err)
	}
	if sch.Ref == nil {
		if s.err == nil { // the reflector's own error says why
			s.err = fmt.Errorf("reflect %T: no named schema", v)
		}
		return obj{}
	}
	return obj{"$ref": *sch.Ref}
}

// inline returns the schema of v with every type it uses written in place
// rather than referenced, for a body no path uses (see webhookItems).
func (s *schemaSet) inline(v any) obj {
	s.mapWireTypes(reflect.TypeOf(v))
	sch, err := s.r.Reflect(v, jsonschema.InlineRefs, jsonschema.InterceptProp(interceptProp))
	if err != nil && s.err == nil {
		s.err = fmt.Errorf("reflect %T: %w", v, err)
	}
	var out obj
	if b, err := json.Marshal(sch); err != nil {
		s.err = err
	} else if err := json.Unmarshal(b, &out); err != nil {
		s.err = err
	}
	normalize(out)
	return out
}

// interceptProp applies the conventions of the wire types: a field
// without omitempty or omitzero is always sent, so it is required; `decimal` is the
// pattern of a decimal input field (see decimalSchema); `contentMediaType`
// names what a file field of a form holds.
func interceptProp(p jsonschema.InterceptPropParams) error {
	if !p.Processed || p.Name == "" {
		return nil
	}
	if object := p.Field.Tag.Get("customFields"); object != "" {
		// Typed per installation when served (customFieldsDoc).
		p.PropertySchema.WithExtraPropertiesItem(customFieldsExt, object)
	}
	if p.Field.Type == reflect.TypeFor[json.RawMessage]() {
		// Any JSON value, passed through as stored (a history entry's
		// before and after): no type, so null, numbers and objects alike.
		p.PropertySchema.Type = nil
		var ex any
		if json.Unmarshal([]byte(p.Field.Tag.Get("example")), &ex) == nil {
			p.PropertySchema.Examples = []any{ex}
		}
	}
	if err := deprecatedProp(p); err != nil {
		return err
	}
	if mt := p.Field.Tag.Get("contentMediaType"); mt != "" {
		p.PropertySchema.WithContentMediaType(mt)
	}
	if pattern := p.Field.Tag.Get("decimal"); pattern != "" {
		decimalSchema(p.PropertySchema, pattern, p.Field.Tag.Get("nullable") == "true", p.Field.Tag.Get("example"))
	}
	if isPatchField(p.Field.Type) && p.PropertySchema.Type != nil && !p.PropertySchema.HasType(jsonschema.Null) {
		p.PropertySchema.AddType(jsonschema.Null) // null clears an update field
	}
	tag := p.Field.Tag.Get("json")
	optional := strings.Contains(tag, ",omitempty") || strings.Contains(tag, ",omitzero")
	if p.Field.Type.Kind() == reflect.Pointer && p.PropertySchema.Ref != nil && !optional {
		// A nil pointer to a record is sent as null.
		ref := *p.PropertySchema
		*p.PropertySchema = jsonschema.Schema{AnyOf: []jsonschema.SchemaOrBool{
			ref.ToSchemaOrBool(), jsonschema.Null.ToSchemaOrBool(),
		}}
	}
	if !optional && !slices.Contains(p.ParentSchema.Required, p.Name) {
		p.ParentSchema.Required = append(p.ParentSchema.Required, p.Name)
	}
	return nil
}

// deprecatedProp gives a property deprecated with `deprecated:"true"`
// (which the reflector reads itself) the x-sunset of its `sunset` tag, a
// date (2027-06-01) the gate (gateway/tools/apicompat) reads as it reads
// an operation's. A sunset without deprecated, or one that is not a
// date, fails the document. A deprecation without a sunset is left to
// the gate, which refuses a new one; the one released before the rule
// (Webhook.secret_prefix) is the only one TestDeprecatedProperties
// allows. The announcement's date and the replacement go in the
// description tag; unlike a route's (route.Deprecation), no header
// announces a property's deprecation.
func deprecatedProp(p jsonschema.InterceptPropParams) error {
	sunset := p.Field.Tag.Get("sunset")
	if sunset == "" {
		return nil
	}
	if p.PropertySchema.Deprecated == nil || !*p.PropertySchema.Deprecated {
		return fmt.Errorf("property %s: sunset %q without deprecated:\"true\"", p.Name, sunset)
	}
	if _, err := time.Parse(time.DateOnly, sunset); err != nil {
		return fmt.Errorf("property %s: sunset %q is not a date (2027-06-01)", p.Name, sunset)
	}
	p.PropertySchema.WithExtraPropertiesItem("x-sunset", sunset)
	return nil
}

// decimalSchema describes a decimal input: a string matching pattern (the
// form the API documents and answers with), or a JSON number, which the
// services read as its exact literal, never as a float. It is an anyOf
// rather than the type list ["string","number"], which code generators
// refuse; the string comes first so a generator's first variant is it.
// The example is the string form, whatever JSON it looks like.
func decimalSchema(s *jsonschema.Schema, pattern string, nullable bool, example string) {
	str := (&jsonschema.Schema{}).WithType(jsonschema.String.Type()).WithPattern(pattern)
	if nullable {
		str.Type = (&jsonschema.Type{}).WithSliceOfSimpleTypeValues(jsonschema.String, jsonschema.Null)
	}
	num := (&jsonschema.Schema{}).WithType(jsonschema.Number.Type())
	s.Type = nil
	s.AnyOf = []jsonschema.SchemaOrBool{str.ToSchemaOrBool(), num.ToSchemaOrBool()}
	s.Examples = nil
	if example != "" {
		s.Examples = []any{example}
	}
}

// components returns the collected schemas as plain JSON values, with a
// nullable enum also listing null (a JSON Schema enum is checked even
// when the type allows null).
func (s *schemaSet) components() (obj, error) {
	if s.err != nil {
		return nil, s.err
	}
	raw, err := json.Marshal(s.defs)
	if err != nil {
		return nil, err
	}
	var out obj
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, err
	}
	normalize(out)
	return out, nil
}

// normalize puts null after the type in a type list (["string","null"])
// and lists null in a nullable enum, in place.
func normalize(v any) {
	walkSchemas(v, func(m obj) {
		if t, ok := m["type"].([]any); ok && len(t) > 1 && t[0] == "null" {
			m["type"] = append(t[1:], "null")
		}
		enum, ok := m["enum"].([]any)
		if ok && allowsNull(m) && !slices.Contains(enum, nil) {
			m["enum"] = append(enum, nil)
		}
	})
}

func allowsNull(m obj) bool {
	switch t := m["type"].(type) {
	case string:
		return t == "null"
	case []any:
		return slices.Contains(t, any("null"))
	}
	return false
}

// walkSchemas calls f on every object of a JSON value, depth first.
func walkSchemas(v any, f func(obj)) {
	switch t := v.(type) {
	case obj:
		f(t)
		for _, c := range t {
			walkSchemas(c, f)
		}
	case []any:
		for _, c := range t {
			walkSchemas(c, f)
		}
	}
}

// example builds an example value of a schema from its examples, consts,
// enums, formats and types, following $refs into defs.
func example(s any, defs obj, depth int, request bool) any {
	m, ok := s.(obj)
	if !ok || depth > 8 {
		return nil
	}
	// A property's own example first: it may stand beside its $ref.
	if ex, ok := m["examples"].([]any); ok && len(ex) > 0 {
		return ex[0]
	}
	if r, ok := m["$ref"].(string); ok {
		return example(defs[strings.TrimPrefix(r, "#/components/schemas/")], defs, depth+1, request)
	}
	if c, ok := m["const"]; ok {
		return c
	}
	if e, ok := m["enum"].([]any); ok && len(e) > 0 {
		return e[0]
	}
	typ := ""
	switch t := m["type"].(type) {
	case string:
		typ = t
	case []any:
		for _, x := range t {
			if x != "null" {
				typ = x.(string)
				break
			}
		}
	}
	switch typ {
	case "object":
		out := obj{}
		props, _ := m["properties"].(obj)
		for name, p := range props {
			// A request shows no server-set field, an answer no secret.
			if pm, _ := p.(obj); (request && pm["readOnly"] == true) || (!request && pm["writeOnly"] == true) {
				continue
			}
			out[name] = example(p, defs, depth+1, request)
		}
		if ap, ok := m["additionalProperties"].(obj); ok && len(props) == 0 {
			out["key"] = example(ap, defs, depth+1, request)
		}
		return out
	case "array":
		if it := example(m["items"], defs, depth+1, request); it != nil {
			return []any{it}
		}
		return []any{}
	case "integer":
		if v, ok := m["minimum"].(float64); ok {
			return v
		}
		return 1
	case "number":
		return 1.5
	case "boolean":
		return true
	case "string":
		switch m["format"] {
		case "date-time":
			return "2026-11-24T09:30:00.000000Z"
		case "date":
			return "2026-11-24"
		case "email":
			return "user@example.com"
		}
		return "text"
	}
	return nil
}
