package gateway

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/opencrm/crm/pkg/contract/contactsapi"
	"github.com/opencrm/crm/pkg/contract/internalapi"
	"github.com/opencrm/crm/pkg/contract/route"
)

// internalDocs returns the generated internal documents as plain JSON.
func internalDocs(t *testing.T) map[string]map[string]any {
	t.Helper()
	docs, err := InternalOpenAPI()
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(docs)
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// refs lists every $ref of a JSON value.
func refs(v any) []string {
	var out []string
	switch t := v.(type) {
	case map[string]any:
		if r, ok := t["$ref"].(string); ok {
			out = append(out, r)
		}
		for _, c := range t {
			out = append(out, refs(c)...)
		}
	case []any:
		for _, c := range t {
			out = append(out, refs(c)...)
		}
	}
	return out
}

// TestInternalOpenAPIOperations: each context's document has exactly the
// operations declared for it, each with its success status and a typed
// answer, and every reference in it resolves within it.
func TestInternalOpenAPIOperations(t *testing.T) {
	t.Parallel()
	docs := internalDocs(t)
	var services []string
	for s := range docs {
		services = append(services, s)
	}
	slices.Sort(services)
	if diff := cmp.Diff(internalapi.Services(), services); diff != "" {
		t.Fatalf("documents (-want +got):\n%s", diff)
	}
	for _, service := range services {
		t.Run(service, func(t *testing.T) {
			t.Parallel()
			d := docs[service]
			var want, got []string
			for _, r := range internalapi.Of(service) {
				want = append(want, r.Pattern())
				op, _ := at(d, "paths", r.Path, strings.ToLower(r.Method)).(map[string]any)
				if op == nil {
					continue
				}
				success := strconv.Itoa(r.SuccessStatus())
				if at(op, "responses", success, "content", "application/json", "schema", "$ref") == nil {
					t.Errorf("%s: no typed %s answer", r.Pattern(), success)
				}
				if at(op, "responses", "401", "$ref") != "#/components/responses/401" {
					t.Errorf("%s: no 401 for a call without the secret", r.Pattern())
				}
			}
			for path, item := range at(d, "paths").(map[string]any) {
				for method := range item.(map[string]any) {
					got = append(got, strings.ToUpper(method)+" "+path)
				}
			}
			slices.Sort(want)
			slices.Sort(got)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("operations (-want +got):\n%s", diff)
			}
			for _, r := range refs(d) {
				keys := strings.Split(strings.TrimPrefix(r, "#/"), "/")
				if !strings.HasPrefix(r, "#/") || at(d, keys...) == nil {
					t.Errorf("%s does not resolve", r)
				}
			}
			if diff := cmp.Diff([]any{map[string]any{"internalToken": []any{}}}, d["security"]); diff != "" {
				t.Errorf("security (-want +got):\n%s", diff)
			}
		})
	}
}

// The documents say what the services answer and take.
func TestInternalOpenAPISchemas(t *testing.T) {
	t.Parallel()
	docs := internalDocs(t)
	createContact := at(docs["contacts"], "paths", contactsapi.PathContacts, "post")
	param := func(op any, name string) any {
		for _, p := range at(op, "parameters").([]any) {
			if at(p, "name") == name {
				return p
			}
		}
		return nil
	}
	tests := []struct {
		name string
		got  any
		want any
	}{
		{"a create answers the record", at(docs["contacts"], "components", "schemas", "ContactData", "properties", "data", "$ref"), "#/components/schemas/Contact"},
		{"a list is its own schema", at(docs["contacts"], "components", "schemas", "ContactDataList", "properties", "data", "items", "$ref"), "#/components/schemas/Contact"},
		{"a create takes the write body", at(createContact, "requestBody", "content", "application/json", "schema", "$ref"), "#/components/schemas/ContactInput"},
		{"a create's key is required", param(createContact, "Idempotency-Key"), map[string]any{"name": "Idempotency-Key", "in": "header", "required": true,
			"description": "The same key with the same body answers the first answer again (Idempotent-Replayed: true); another body is a 409.",
			"schema":      map[string]any{"type": "string", "maxLength": 255.0}}},
		{"a reused key", at(createContact, "responses", "409", "$ref"), "#/components/responses/409"},
		{"created", at(createContact, "responses", "201", "description"), "Created"},
		{"a nullable answer", at(docs["leads"], "components", "schemas", "DuplicateOfData", "properties", "data", "anyOf"), []any{
			map[string]any{"$ref": "#/components/schemas/DuplicateOf"}, map[string]any{"type": "null"}}},
		{"a shared route in each server's document", at(docs["mail"], "paths", "/internal/merges/{id}", "post", "requestBody", "content", "application/json", "schema", "$ref"), "#/components/schemas/Move"},
		{"the query of a match", at(param(at(docs["contacts"], "paths", contactsapi.PathMatchCompanies, "get"), "limit"), "schema"), map[string]any{
			"type": "integer", "minimum": 1.0, "maximum": float64(contactsapi.MaxMatchLimit), "default": 5.0}},
		{"identity's verification", at(docs["identity"], "components", "schemas", "VerifiedKeyRecord", "properties", "data", "$ref"), "#/components/schemas/VerifiedKey"},
	}
	for _, tc := range tests {
		if diff := cmp.Diff(tc.want, tc.got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, diff)
		}
	}
}

// ContactData is another package's type of contactsapi's name.
type ContactData struct {
	ID int64 `json:"id"`
}

// Two request or answer types the generator would name alike are
// refused rather than one silently replacing the other.
func TestInternalOpenAPIRefusesSchemaNameClashes(t *testing.T) {
	t.Parallel()
	_, err := internalDocument("contacts", []route.Internal{
		route.At("GET /internal/contacts/{id}", route.Internal{Service: "contacts", Summary: "One", Response: route.Data[contactsapi.Contact]{}}),
		route.At("GET /internal/contacts/match", route.Internal{Service: "contacts", Summary: "Other", Response: ContactData{}}),
	})
	if err == nil || !strings.Contains(err.Error(), "would both be the schema ContactData") {
		t.Errorf("error %v, want the clash named", err)
	}
	if _, err := internalDocument("contacts", []route.Internal{
		route.At("GET /internal/contacts/{id}", route.Internal{Service: "contacts", Summary: "One", Response: route.Data[contactsapi.Contact]{}}),
		route.At("GET /internal/contacts/{id}", route.Internal{Service: "contacts", Summary: "Again", Response: route.Data[contactsapi.Contact]{}}),
	}); err == nil || !strings.Contains(err.Error(), "declared twice") {
		t.Errorf("error %v, want the repeated route named", err)
	}
}
