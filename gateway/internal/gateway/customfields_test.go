package gateway

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/opencrm/crm/pkg/auth"
	"github.com/opencrm/crm/pkg/contract/propertyapi"
)

// TestTypeCustomFields proves a record's custom_fields lists every
// definition (required, nullable) and an input's lists them optional,
// enum values included, while an object without definitions read stays
// untyped.
func TestTypeCustomFields(t *testing.T) {
	t.Parallel()
	static := `{"components":{"schemas":{
		"Contact":{"type":"object","required":["id","custom_fields"],"properties":{"id":{"type":"integer"},
			"custom_fields":{"type":"object","description":"d","x-custom-fields":"contacts"}}},
		"ContactInput":{"type":"object","properties":{"custom_fields":{"type":"object","description":"d","x-custom-fields":"contacts"}}},
		"Lead":{"type":"object","required":["custom_fields"],"properties":{"custom_fields":{"type":"object","x-custom-fields":"leads"}}}}}}`
	defs := map[string][]propertyapi.Property{"contacts": {
		{Name: "tier", Label: "Tier", Type: "enum", Options: []propertyapi.Option{{Value: "gold"}, {Value: "silver", Archived: true}}},
		{Name: "budget", Label: "Budget", Type: "number"},
	}}
	b, err := typeCustomFields([]byte(static), defs)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Components struct {
			Schemas map[string]struct {
				Properties map[string]any `json:"properties"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	tier := map[string]any{"title": "Tier", "type": []any{"string", "null"}, "enum": []any{"gold", "silver", nil}}
	budget := map[string]any{"title": "Budget", "type": []any{"string", "null"}, "pattern": `^-?[0-9]+(\.[0-9]+)?$`,
		"description": "An exact decimal (up to 18 digits, 6 after the point), as a string; a JSON number is accepted on writes."}
	record := map[string]any{"type": "object", "description": "d", "x-custom-fields": "contacts",
		"properties": map[string]any{"tier": tier, "budget": budget}, "required": []any{"tier", "budget"}}
	if diff := cmp.Diff(record, doc.Components.Schemas["Contact"].Properties["custom_fields"]); diff != "" {
		t.Errorf("record (-want +got):\n%s", diff)
	}
	input := map[string]any{"type": "object", "description": "d", "x-custom-fields": "contacts",
		"properties": map[string]any{"tier": tier, "budget": budget}}
	if diff := cmp.Diff(input, doc.Components.Schemas["ContactInput"].Properties["custom_fields"]); diff != "" {
		t.Errorf("input (-want +got):\n%s", diff)
	}
	untyped := map[string]any{"type": "object", "x-custom-fields": "leads"}
	if diff := cmp.Diff(untyped, doc.Components.Schemas["Lead"].Properties["custom_fields"]); diff != "" {
		t.Errorf("lead (-want +got):\n%s", diff)
	}
}

// TestTypeSortByCustomFields proves the sort_by enum of an object's lists
// (its operations that take the cf filters: the list and the export)
// gains cf.<name> for each sortable definition, in definition order,
// while textarea and multi_enum fields, an operation without the filters
// and an object whose definitions were not read keep the enum as is.
func TestTypeSortByCustomFields(t *testing.T) {
	t.Parallel()
	list := func(enum string) string {
		return `{"get":{"parameters":[{"name":"cf","in":"query","style":"deepObject"},
			{"name":"sort_by","in":"query","schema":{"type":"string","enum":[` + enum + `]}}]}}`
	}
	static := `{"paths":{
		"/contacts":` + list(`"name","created_at"`) + `,
		"/contacts/export":` + list(`"name"`) + `,
		"/contacts/{id}/activity":{"get":{"parameters":[{"name":"sort_by","in":"query","schema":{"type":"string","enum":["created_at"]}}]}},
		"/leads":` + list(`"name"`) + `}}`
	defs := map[string][]propertyapi.Property{"contacts": {
		{Name: "tier", Label: "Tier", Type: "enum", Options: []propertyapi.Option{{Value: "gold"}}},
		{Name: "notes", Label: "Notes", Type: "textarea"},
		{Name: "topics", Label: "Topics", Type: "multi_enum", Options: []propertyapi.Option{{Value: "a"}}},
		{Name: "renewal", Label: "Renewal", Type: "date"},
	}}
	b, err := typeCustomFields([]byte(static), defs)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{
		"/contacts":               {"name", "created_at", "cf.tier", "cf.renewal"},
		"/contacts/export":        {"name", "cf.tier", "cf.renewal"},
		"/contacts/{id}/activity": {"created_at"},
		"/leads":                  {"name"},
	}
	if diff := cmp.Diff(want, sortByEnums(t, b)); diff != "" {
		t.Errorf("sort_by enums (-want +got):\n%s", diff)
	}
}

// sortByEnums are the sort_by enums of a document's GET operations, by path.
func sortByEnums(t *testing.T, doc []byte) map[string][]string {
	t.Helper()
	var d struct {
		Paths map[string]struct {
			Get *struct {
				Parameters []struct {
					Name   string `json:"name"`
					Schema struct {
						Enum []string `json:"enum"`
					} `json:"schema"`
				} `json:"parameters"`
			} `json:"get"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(doc, &d); err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for path, item := range d.Paths {
		if item.Get == nil {
			continue
		}
		for _, p := range item.Get.Parameters {
			if p.Name == "sort_by" {
				out[path] = p.Schema.Enum
			}
		}
	}
	return out
}

// TestOpenAPIServedWithCustomFields: the served document types contacts'
// custom_fields with the definitions contacts answers and lists the
// sortable fields of contacts, companies, leads and deals in the sort_by
// of their lists (the base document keeps its enums), carries an ETag a client can revalidate with
// (304), and a new ETag once a field is added.
func TestOpenAPIServedWithCustomFields(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	defs := []propertyapi.Property{{Object: "contacts", Name: "tier", Label: "Tier", Type: "enum", Options: []propertyapi.Option{{Value: "gold"}}}}
	// The other objects' fields, one sortable and one not each; contacts'
	// are defs, which grow below.
	others := map[string][]propertyapi.Property{}
	for _, object := range []string{"companies", "leads", "deals"} {
		others[object] = []propertyapi.Property{{Object: object, Name: "notes", Label: "Notes", Type: "textarea"},
			{Object: object, Name: "score", Label: "Score", Type: "number"}}
	}
	owners := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		object, ok := strings.CutPrefix(r.URL.Path, propertyapi.PathInternal)
		mu.Lock()
		defer mu.Unlock()
		list, known := others[object]
		if object == "contacts" {
			list, known = defs, true
		}
		if !ok || !known || r.Header.Get(auth.InternalHeader) != testSecret {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(propertyapi.Definitions{Data: list})
	}))
	t.Cleanup(owners.Close)
	e := newEnv(t, func(c *Config) {
		for _, svc := range []string{SvcContacts, SvcLeads, SvcDeals} {
			c.Services[svc] = owners.URL
		}
	})
	typed := func(r response) map[string]any {
		t.Helper()
		var doc struct {
			Components struct {
				Schemas map[string]struct {
					Properties map[string]struct {
						Properties map[string]any `json:"properties"`
					} `json:"properties"`
				} `json:"schemas"`
			} `json:"components"`
		}
		if err := json.Unmarshal(r.body, &doc); err != nil {
			t.Fatal(err)
		}
		return doc.Components.Schemas["Contact"].Properties["custom_fields"].Properties
	}
	r := e.do(req{path: "/openapi.json"})
	etag := r.header.Get("ETag")
	if r.status != http.StatusOK || etag == "" {
		t.Fatalf("status %d, ETag %q", r.status, etag)
	}
	if got := typed(r); got["tier"] == nil || len(got) != 1 {
		t.Errorf("Contact.custom_fields properties = %v, want tier", got)
	}
	if r := e.do(req{path: "/openapi.json", header: map[string]string{"If-None-Match": etag}}); r.status != http.StatusNotModified || len(r.body) != 0 {
		t.Errorf("revalidation: %d with %d bytes, want 304", r.status, len(r.body))
	}
	mu.Lock()
	defs = append(defs, propertyapi.Property{Object: "contacts", Name: "renewal", Label: "Renewal", Type: "date"})
	mu.Unlock()
	r = e.do(req{path: "/openapi.json", header: map[string]string{"If-None-Match": etag}})
	if r.status != http.StatusOK || r.header.Get("ETag") == etag {
		t.Fatalf("after a new field: %d, ETag %q (was %q)", r.status, r.header.Get("ETag"), etag)
	}
	if got := typed(r); got["renewal"] == nil {
		t.Errorf("Contact.custom_fields properties = %v, want renewal too", got)
	}

	// sort_by: the base document's enum, plus cf.<name> of the sortable
	// fields on the lists of contacts, companies, leads and deals; the
	// other lists are the base document's.
	static, err := OpenAPI()
	if err != nil {
		t.Fatal(err)
	}
	raw, err := json.Marshal(static)
	if err != nil {
		t.Fatal(err)
	}
	want := sortByEnums(t, raw)
	for _, path := range []string{"/contacts", "/contacts/export", "/companies", "/leads", "/leads/export", "/deals"} {
		for _, v := range want[path] {
			if strings.HasPrefix(v, propertyapi.SortPrefix) {
				t.Errorf("the base document's %s sort_by holds %q", path, v)
			}
		}
	}
	for path, added := range map[string][]string{
		"/contacts": {"cf.tier", "cf.renewal"}, "/contacts/export": {"cf.tier", "cf.renewal"},
		"/companies": {"cf.score"}, "/leads": {"cf.score"}, "/leads/export": {"cf.score"}, "/deals": {"cf.score"},
	} {
		if want[path] == nil {
			t.Fatalf("the base document has no sort_by on %s", path)
		}
		want[path] = append(slices.Clone(want[path]), added...)
	}
	if diff := cmp.Diff(want, sortByEnums(t, r.body)); diff != "" {
		t.Errorf("typed sort_by enums (-want +got):\n%s", diff)
	}
}
