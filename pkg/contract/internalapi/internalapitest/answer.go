package internalapitest

import (
	"bytes"
	"encoding"
	"encoding/json"
	"maps"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/opencrm/crm/pkg/auth"
	"github.com/opencrm/crm/pkg/contract/route"
)

// Answer calls r on h as another context does (the internal secret, an
// Idempotency-Key when r takes one) at url (r.Path with its wildcards
// filled, and a query), with body JSON-encoded (nil: none), and checks
// the answer is r's success status with the shape of r.Response: every
// member its Go type always sends is there, and none it does not declare,
// at the top and inside data, so the document generated from the
// declaration (api/released/internal) says what the service sends. It
// returns the decoded answer for the next call.
func Answer(t *testing.T, h http.Handler, secret string, r route.Internal, url string, body any) map[string]any {
	t.Helper()
	var rd bytes.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		rd.Reset(b)
	}
	req := httptest.NewRequest(r.Method, url, &rd)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(auth.InternalHeader, secret)
	if r.IdempotencyKey {
		req.Header.Set("Idempotency-Key", "internalapitest-"+strings.ReplaceAll(url, "/", "-"))
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != r.SuccessStatus() {
		t.Fatalf("%s at %s: %d %s, want %d", r.Pattern(), url, rec.Code, rec.Body, r.SuccessStatus())
	}
	var out map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil {
		t.Fatalf("%s: answer %q: %v", r.Pattern(), rec.Body, err)
	}
	for _, p := range Conforms(out, reflect.TypeOf(r.Response), "") {
		t.Errorf("%s: %s", r.Pattern(), p)
	}
	return out
}

var (
	rawMessage = reflect.TypeFor[json.RawMessage]()
	marshaler  = reflect.TypeFor[json.Marshaler]()
	textMarsh  = reflect.TypeFor[encoding.TextMarshaler]()
)

// Conforms lists where the JSON value v departs from what Go type t
// encodes: a missing member that t always sends, a member t does not
// have, an object where t is a list or the reverse. Values of types that
// encode themselves (timestamps, decimals) and JSON passed through
// (json.RawMessage, any) are taken as they are.
func Conforms(v any, t reflect.Type, at string) []string {
	if v == nil {
		return nil // a nil pointer, slice or map: null
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == rawMessage || t.Kind() == reflect.Interface || t.Implements(marshaler) || reflect.PointerTo(t).Implements(marshaler) ||
		t.Implements(textMarsh) || reflect.PointerTo(t).Implements(textMarsh) {
		return nil
	}
	name := at
	if name == "" {
		name = "the answer"
	}
	switch t.Kind() {
	case reflect.Struct:
		m, ok := v.(map[string]any)
		if !ok {
			return []string{name + " is not an object"}
		}
		var out []string
		fields := map[string]reflect.StructField{}
		optional := map[string]bool{}
		collectFields(t, fields, optional)
		for _, k := range slices.Sorted(maps.Keys(fields)) {
			val, has := m[k]
			if !has {
				if !optional[k] {
					out = append(out, join(at, k)+" is missing")
				}
				continue
			}
			out = append(out, Conforms(val, fields[k].Type, join(at, k))...)
		}
		for _, k := range slices.Sorted(maps.Keys(m)) {
			if _, ok := fields[k]; !ok {
				out = append(out, join(at, k)+" is sent but not declared")
			}
		}
		return out
	case reflect.Slice, reflect.Array:
		l, ok := v.([]any)
		if !ok {
			return []string{name + " is not a list"}
		}
		var out []string
		for i, e := range l {
			out = append(out, Conforms(e, t.Elem(), join(at, "["+itoa(i)+"]"))...)
		}
		return out
	case reflect.Map:
		m, ok := v.(map[string]any)
		if !ok {
			return []string{name + " is not an object"}
		}
		var out []string
		for _, k := range slices.Sorted(maps.Keys(m)) {
			out = append(out, Conforms(m[k], t.Elem(), join(at, k))...)
		}
		return out
	}
	return nil
}

// collectFields gathers t's JSON members by name, embedded structs'
// flattened, and which of them may be left out (omitempty, omitzero).
func collectFields(t reflect.Type, fields map[string]reflect.StructField, optional map[string]bool) {
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" || (!f.IsExported() && !f.Anonymous) {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				collectFields(ft, fields, optional)
				continue
			}
		}
		if name == "" {
			name = f.Name
		}
		fields[name] = f
		optional[name] = strings.Contains(opts, "omitempty") || strings.Contains(opts, "omitzero")
	}
}

func join(at, k string) string {
	if at == "" {
		return k
	}
	if strings.HasPrefix(k, "[") {
		return at + k
	}
	return at + "." + k
}

func itoa(i int) string { return strconv.Itoa(i) }
