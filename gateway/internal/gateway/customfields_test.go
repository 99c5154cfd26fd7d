package gateway

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
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

// TestOpenAPIServedWithCustomFields: the served document types contacts'
// custom_fields with the definitions contacts answers, carries an ETag a
// client can revalidate with (304), and a new ETag once a field is added.
func TestOpenAPIServedWithCustomFields(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	defs := []propertyapi.Property{{Object: "contacts", Name: "tier", Label: "Tier", Type: "enum", Options: []propertyapi.Option{{Value: "gold"}}}}
	contacts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != propertyapi.PathInternal+"contacts" || r.Header.Get(auth.InternalHeader) != testSecret {
			http.NotFound(w, r)
			return
		}
		mu.Lock()
		defer mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(propertyapi.Definitions{Data: defs})
	}))
	t.Cleanup(contacts.Close)
	e := newEnv(t, func(c *Config) { c.Services[SvcContacts] = contacts.URL })
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
}
