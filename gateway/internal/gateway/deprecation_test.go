package gateway

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/opencrm/crm/pkg/contract/envelope"
	"github.com/opencrm/crm/pkg/contract/route"
)

// Nothing of the real API is deprecated yet: these tests declare their
// own routes.

// oldThing is a wire type with a deprecated property.
type oldThing struct {
	ID   int64  `json:"id"`
	Name string `json:"name" deprecated:"true" sunset:"2027-06-01" description:"Deprecated since 2026-12-01: use title."`
}

var testDeprecation = &route.Deprecation{
	Since:       route.Day(2026, time.December, 1),
	Sunset:      route.Day(2027, time.June, 2),
	Replacement: "GET /things",
}

// deprecatedRoutes are a deprecated public route with a deprecated
// parameter, a deprecated route needing a token, and the route replacing
// them.
func deprecatedRoutes() []route.Route {
	old := route.Q("color", "string", "Old filter.")
	old.Deprecated = &route.Deprecation{Since: route.Day(2026, time.December, 1), Sunset: route.Day(2027, time.December, 1),
		Replacement: "the query parameter colour"}
	return []route.Route{
		{Method: "GET", Path: "/old-things", Service: SvcContacts, Auth: route.Public, Tag: "Contacts", Summary: "List old things",
			Query: []route.Param{route.Page, old}, Response: envelope.Record[oldThing]{}, Deprecated: testDeprecation},
		{Method: "DELETE", Path: "/old-things/{id}", Service: SvcContacts, Auth: route.JWT, Resource: "contacts", Tag: "Contacts",
			Summary: "Delete an old thing", Response: envelope.Record[oldThing]{}, Deprecated: testDeprecation},
		{Method: "GET", Path: "/things", Service: SvcContacts, Auth: route.Public, Tag: "Contacts", Summary: "List things",
			Response: envelope.Record[oldThing]{}},
	}
}

// TestDeprecatedRouteHeaders: every answer of a deprecated route, a
// refusal included, carries Deprecation (the Unix time of Since, RFC
// 9745), Sunset (an HTTP-date, RFC 8594) and a Link to the documentation;
// another route's answers carry none.
func TestDeprecatedRouteHeaders(t *testing.T) {
	t.Parallel()
	e := newEnvRoutes(t, nil, deprecatedRoutes())
	want := http.Header{
		"Deprecation": {"@1796083200"},
		"Sunset":      {"Wed, 02 Jun 2027 00:00:00 GMT"},
		"Link":        {`</docs>; rel="deprecation"; type="text/html"`},
	}
	got := func(r response) http.Header {
		h := http.Header{}
		for _, k := range []string{"Deprecation", "Sunset", "Link"} {
			if v := r.header.Values(k); v != nil {
				h[k] = v
			}
		}
		return h
	}

	ok := e.do(req{path: "/api/old-things?page=2"})
	if ok.status != http.StatusOK {
		t.Fatalf("GET /api/old-things: status %d, body %s", ok.status, ok.body)
	}
	if s := echoed(t, ok); s.Path != "/old-things" || s.Query != "page=2" {
		t.Errorf("proxied %s?%s, want /old-things?page=2", s.Path, s.Query)
	}
	if diff := cmp.Diff(want, got(ok)); diff != "" {
		t.Errorf("success headers (-want +got):\n%s", diff)
	}

	refused := e.do(req{method: "DELETE", path: "/api/old-things/7"})
	wantProblem(t, refused, http.StatusUnauthorized, "unauthenticated")
	if diff := cmp.Diff(want, got(refused)); diff != "" {
		t.Errorf("401 headers (-want +got):\n%s", diff)
	}

	other := e.do(req{path: "/api/things"})
	if other.status != http.StatusOK {
		t.Fatalf("GET /api/things: status %d, body %s", other.status, other.body)
	}
	if diff := cmp.Diff(http.Header{}, got(other)); diff != "" {
		t.Errorf("headers of a route not deprecated (-want +got):\n%s", diff)
	}
}

// TestOpenAPIDeprecated: the document marks a deprecated operation,
// parameter and property deprecated with x-sunset from the declaration,
// says since when and what replaces it, and declares the deprecation
// headers on each of the operation's answers.
func TestOpenAPIDeprecated(t *testing.T) {
	t.Parallel()
	d, err := openAPI(deprecatedRoutes())
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	var spec map[string]any
	if err := json.Unmarshal(b, &spec); err != nil {
		t.Fatal(err)
	}
	note := "Deprecated since 2026-12-01; it may be removed from 2027-06-02 on (x-sunset). Use instead: GET /things."
	for _, op := range []struct{ path, method string }{{"/old-things", "get"}, {"/old-things/{id}", "delete"}} {
		o := at(spec, "paths", op.path, op.method).(map[string]any)
		if o["deprecated"] != true || o["x-sunset"] != "2027-06-02" {
			t.Errorf("%s %s: deprecated %v, x-sunset %v; want true, 2027-06-02", op.method, op.path, o["deprecated"], o["x-sunset"])
		}
		if desc, _ := o["description"].(string); !strings.HasSuffix(desc, "\n\n"+note) {
			t.Errorf("%s %s: description %q does not end with %q", op.method, op.path, desc, note)
		}
		responses := o["responses"].(map[string]any)
		if len(responses) < 5 {
			t.Errorf("%s %s: %d responses", op.method, op.path, len(responses))
		}
		for status, r := range responses {
			rm := r.(map[string]any)
			if rm["$ref"] != nil {
				t.Errorf("%s %s %s: a $ref, which can carry no headers", op.method, op.path, status)
				continue
			}
			h, _ := rm["headers"].(map[string]any)
			wantRefs := map[string]any{
				"Deprecation": "#/components/headers/Deprecation",
				"Sunset":      "#/components/headers/Sunset",
				"Link":        "#/components/headers/DeprecationLink",
			}
			for name, ref := range wantRefs {
				if at(h, name, "$ref") != ref {
					t.Errorf("%s %s %s: header %s is %v, want a $ref to %s", op.method, op.path, status, name, h[name], ref)
				}
			}
			if status != "200" && at(rm, "content", "application/problem+json") == nil {
				t.Errorf("%s %s %s: the problem answer lost its body: %v", op.method, op.path, status, rm)
			}
		}
	}
	for _, name := range []string{"Deprecation", "Sunset", "DeprecationLink"} {
		if at(spec, "components", "headers", name, "description") == nil {
			t.Errorf("components.headers.%s not declared", name)
		}
	}
	// The shared problem answers stay as they were: only the deprecated
	// operation's own copies carry the headers.
	if h := at(spec, "components", "responses", "401", "headers").(map[string]any); h["Deprecation"] != nil {
		t.Errorf("components.responses.401 carries Deprecation: %v", h)
	}

	params := at(spec, "paths", "/old-things", "get", "parameters").([]any)
	i := slices.IndexFunc(params, func(p any) bool { return p.(map[string]any)["name"] == "color" })
	if i < 0 {
		t.Fatalf("no parameter color in %v", params)
	}
	wantParam := map[string]any{"name": "color", "in": "query", "required": false, "schema": map[string]any{"type": "string"},
		"deprecated": true, "x-sunset": "2027-12-01",
		"description": "Old filter.\n\nDeprecated since 2026-12-01; it may be removed from 2027-12-01 on (x-sunset). Use instead: the query parameter colour."}
	if diff := cmp.Diff(wantParam, params[i]); diff != "" {
		t.Errorf("deprecated parameter (-want +got):\n%s", diff)
	}
	if p := params[0].(map[string]any); p["deprecated"] != nil || p["x-sunset"] != nil {
		t.Errorf("parameter page is deprecated: %v", p)
	}

	wantProp := map[string]any{"type": "string", "deprecated": true, "x-sunset": "2027-06-01",
		"description": "Deprecated since 2026-12-01: use title."}
	if diff := cmp.Diff(wantProp, at(spec, "components", "schemas", "oldThing", "properties", "name")); diff != "" {
		t.Errorf("deprecated property (-want +got):\n%s", diff)
	}

	things := at(spec, "paths", "/things", "get").(map[string]any)
	if things["deprecated"] != nil || things["x-sunset"] != nil || at(things, "responses", "200", "headers", "Deprecation") != nil {
		t.Errorf("GET /things is documented deprecated: %v", things)
	}
	if at(things, "responses", "500", "$ref") != "#/components/responses/500" {
		t.Errorf("GET /things 500 is not the shared answer: %v", at(things, "responses", "500"))
	}
}

// TestDeprecatedPropertyTags: a sunset tag needs deprecated:"true" and a
// date; either mistake fails the document rather than publishing a
// sunset the gate would misread.
func TestDeprecatedPropertyTags(t *testing.T) {
	t.Parallel()
	type noDeprecated struct {
		Name string `json:"name" sunset:"2027-06-01"`
	}
	type badDate struct {
		Name string `json:"name" deprecated:"true" sunset:"June 2027"`
	}
	tests := []struct {
		name string
		v    any
		want string
	}{
		{"sunset without deprecated", noDeprecated{}, `property name: sunset "2027-06-01" without deprecated:"true"`},
		{"not a date", badDate{}, `property name: sunset "June 2027" is not a date (2027-06-01)`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			set := newSchemaSet()
			set.ref(tc.v)
			_, err := set.components()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("components: error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// TestDeprecatedProperties guards the rule for properties, as
// TestDeclarations does for routes: every deprecated property of the
// document has an x-sunset.
func TestDeprecatedProperties(t *testing.T) {
	t.Parallel()
	var got []string
	for name, s := range at(doc(t), "components", "schemas").(map[string]any) {
		props, _ := at(s, "properties").(map[string]any)
		for prop, p := range props {
			if pm := p.(map[string]any); pm["deprecated"] == true && pm["x-sunset"] == nil {
				got = append(got, name+"."+prop)
			}
		}
	}
	slices.Sort(got)
	if diff := cmp.Diff([]string(nil), got); diff != "" {
		t.Errorf("deprecated properties without x-sunset (-want +got):\n%s", diff)
	}
}
