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
	"github.com/opencrm/crm/pkg/contract/internalapi"
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

// Caller calls the internal routes declared for one service by their
// pattern, each with Answer, and fails the test at its end unless every
// route declared for the service was called: a route added later is not
// left out of the service's TestInternalAnswers.
type Caller struct {
	t      *testing.T
	h      http.Handler
	secret string
	routes map[string]route.Internal
	called map[string]bool
}

// Calls is a Caller of service's routes on h, with the internal secret.
func Calls(t *testing.T, h http.Handler, secret, service string) *Caller {
	t.Helper()
	c := &Caller{t: t, h: h, secret: secret, routes: map[string]route.Internal{}, called: map[string]bool{}}
	for _, r := range internalapi.Of(service) {
		c.routes[r.Pattern()] = r
	}
	t.Cleanup(func() {
		for _, p := range slices.Sorted(maps.Keys(c.routes)) {
			if !c.called[p] {
				t.Errorf("%s is declared for %s and was not called: call it", p, service)
			}
		}
	})
	return c
}

// Call answers the route of pattern ("POST /internal/contacts") at url
// with body, as Answer does.
func (c *Caller) Call(pattern, url string, body any) map[string]any {
	c.t.Helper()
	r, ok := c.routes[pattern]
	if !ok {
		c.t.Fatalf("%s is not declared for this service", pattern)
	}
	c.called[pattern] = true
	return Answer(c.t, c.h, c.secret, r, url, body)
}
