package gateway

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/opencrm/crm/pkg/contract/propertyapi"
	"github.com/opencrm/crm/pkg/contract/route"
	"github.com/opencrm/crm/pkg/svcclient"
)

// customFieldsExt marks a custom_fields property of the document with the
// object whose definitions type it.
const customFieldsExt = "x-custom-fields"

// definitionsWait bounds the wait for one context's definitions; a
// context that does not answer leaves its objects' custom_fields untyped
// rather than holding the document back.
const definitionsWait = 2 * time.Second

// customFieldsDoc serves the OpenAPI document typed with this
// installation's custom fields: each custom_fields property lists the
// object's current definitions and each of its lists' sort_by takes
// cf.<name> for the sortable ones, so a client generated now is typed for
// today's fields. The typed document is rebuilt only when the
// definitions change; its ETag is its content's hash, equal on every
// replica.
type customFieldsDoc struct {
	static  []byte
	objects []fieldsSource
	log     *slog.Logger

	mu          sync.Mutex
	fingerprint string
	doc         []byte
	etag        string
}

// fieldsSource is an object with custom fields and the client of the
// context that owns it.
type fieldsSource struct {
	object string
	client *propertyapi.Client
}

// newCustomFieldsDoc finds the objects with custom fields in the
// declarations (GET /properties/{object}) and reads each from its owner.
func newCustomFieldsDoc(static []byte, routes []route.Route, services map[string]string, secret string, log *slog.Logger) *customFieldsDoc {
	d := &customFieldsDoc{static: static, log: log}
	for _, rt := range routes {
		object, ok := strings.CutPrefix(rt.Path, "/properties/")
		if !ok || rt.Method != "GET" || strings.Contains(object, "/") {
			continue
		}
		sc := svcclient.New(rt.Service, services[rt.Service], secret)
		sc.Timeout = definitionsWait
		d.objects = append(d.objects, fieldsSource{object: object, client: propertyapi.NewClient(sc)})
	}
	d.doc, d.etag = static, etagOf(static)
	return d
}

func etagOf(b []byte) string {
	sum := sha256.Sum256(b)
	return `"` + hex.EncodeToString(sum[:16]) + `"`
}

// get returns the document and its ETag for the definitions now.
func (d *customFieldsDoc) get(ctx context.Context) ([]byte, string) {
	defs := d.definitions(ctx)
	raw, _ := json.Marshal(defs)
	fp := string(raw)
	d.mu.Lock()
	defer d.mu.Unlock()
	if fp == d.fingerprint {
		return d.doc, d.etag
	}
	doc, err := typeCustomFields(d.static, defs)
	if err != nil {
		d.log.Error("openapi: typing custom fields", "error", err)
		return d.static, etagOf(d.static)
	}
	d.fingerprint, d.doc, d.etag = fp, doc, etagOf(doc)
	return d.doc, d.etag
}

// definitions reads every object's definitions at once; an object whose
// owner fails is absent (its custom_fields stay untyped).
func (d *customFieldsDoc) definitions(ctx context.Context) map[string][]propertyapi.Property {
	out := make(map[string][]propertyapi.Property, len(d.objects))
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, o := range d.objects {
		wg.Go(func() {
			defs, err := o.client.List(ctx, o.object)
			if err != nil {
				d.log.Warn("openapi: custom fields unavailable", "object", o.object, "error", err)
				return
			}
			mu.Lock()
			out[o.object] = defs
			mu.Unlock()
		})
	}
	wg.Wait()
	return out
}

// typeCustomFields replaces each marked custom_fields schema of the
// document with one typed property per definition of its object, left
// open like every object of the document (a client generated before a
// field was added keeps reading records that carry it). In a
// record (where custom_fields is required) every name is required and
// may be null; in an input every name is optional. The sort_by enum of
// the object's lists gains its sortable fields (sortByCustomFields).
func typeCustomFields(static []byte, defs map[string][]propertyapi.Property) ([]byte, error) {
	var doc obj
	if err := json.Unmarshal(static, &doc); err != nil {
		return nil, err
	}
	components, _ := doc["components"].(obj)
	schemas, _ := components["schemas"].(obj)
	for _, s := range schemas {
		parent, _ := s.(obj)
		props, _ := parent["properties"].(obj)
		cf, _ := props["custom_fields"].(obj)
		object, _ := cf[customFieldsExt].(string)
		list, ok := defs[object]
		if object == "" || !ok {
			continue
		}
		required, _ := parent["required"].([]any)
		props["custom_fields"] = fieldsSchema(cf, list, slices.Contains(required, any("custom_fields")))
	}
	paths, _ := doc["paths"].(obj)
	for path, item := range paths {
		object, _, _ := strings.Cut(strings.TrimPrefix(path, "/"), "/")
		list, ok := defs[object]
		if !ok {
			continue
		}
		ops, _ := item.(obj)
		get, _ := ops["get"].(obj)
		sortByCustomFields(get, list)
	}
	return json.Marshal(doc)
}

// sortByCustomFields adds sort_by=cf.<name> for each sortable definition
// to the sort_by enum of a list operation of their object, as the
// services accept it (customfield.ParseFilters). A list is an operation
// under the object's path that takes the custom-field filters
// (propertyapi.Filters), the mark of a query customfield parses; other
// operations there, and other objects' lists, are left alone.
func sortByCustomFields(op obj, defs []propertyapi.Property) {
	params, _ := op["parameters"].([]any)
	var filters bool
	var sortBy obj
	for _, p := range params {
		param, _ := p.(obj)
		if param["in"] != "query" {
			continue
		}
		switch param["name"] {
		case propertyapi.Filters.Name:
			filters = true
		case "sort_by":
			sortBy, _ = param["schema"].(obj)
		}
	}
	enum, _ := sortBy["enum"].([]any)
	if !filters || enum == nil {
		return
	}
	for _, d := range defs {
		if propertyapi.Sortable(d.Type) {
			enum = append(enum, propertyapi.SortPrefix+d.Name)
		}
	}
	sortBy["enum"] = enum
}

func fieldsSchema(untyped obj, defs []propertyapi.Property, record bool) obj {
	props := obj{}
	names := []any{}
	for _, d := range defs {
		props[d.Name] = valueSchema(d)
		names = append(names, d.Name)
	}
	out := obj{
		"type":          "object",
		"properties":    props,
		customFieldsExt: untyped[customFieldsExt],
	}
	if desc, ok := untyped["description"]; ok {
		out["description"] = desc
	}
	if record && len(names) > 0 {
		out["required"] = names
	}
	return out
}

// valueSchema is one definition's value: its type, or null.
func valueSchema(d propertyapi.Property) obj {
	s := obj{"title": d.Label}
	if d.Description != "" {
		s["description"] = d.Description
	}
	nullable := func(t string) []any { return []any{t, "null"} }
	switch d.Type {
	case "number":
		s["type"] = nullable("string")
		s["pattern"] = `^-?[0-9]+(\.[0-9]+)?$`
		s["description"] = strings.TrimSpace(d.Description + " An exact decimal (up to 18 digits, 6 after the point), as a string; a JSON number is accepted on writes.")
	case "boolean":
		s["type"] = nullable("boolean")
	case "user":
		s["type"] = nullable("integer")
		s["format"] = "int64"
		s["minimum"] = 1
	case "enum":
		s["type"] = nullable("string")
		s["enum"] = append(optionValues(d), nil)
	case "multi_enum":
		s["type"] = nullable("array")
		s["items"] = obj{"type": "string", "enum": optionValues(d)}
	default:
		s["type"] = nullable("string")
		switch d.Type {
		case "text":
			s["maxLength"] = 255
		case "textarea":
			s["maxLength"] = 100000
		case "date":
			s["format"] = "date"
		case "datetime":
			s["format"] = "date-time"
		case "url":
			s["format"] = "uri"
			s["maxLength"] = 2048
		case "email":
			s["format"] = "email"
		case "phone":
			s["maxLength"] = 50
		}
	}
	return s
}

func optionValues(d propertyapi.Property) []any {
	vs := make([]any, 0, len(d.Options))
	for _, o := range d.Options {
		vs = append(vs, o.Value)
	}
	return vs
}
