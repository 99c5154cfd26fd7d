package gateway

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/opencrm/crm/pkg/csvx"
)

// doc returns the generated document as plain JSON values.
func doc(t *testing.T) map[string]any {
	t.Helper()
	d, err := OpenAPI()
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// at follows a path of keys through nested JSON objects.
func at(v any, keys ...string) any {
	for _, k := range keys {
		m, _ := v.(map[string]any)
		v = m[k]
	}
	return v
}

func TestOpenAPISchemas(t *testing.T) {
	t.Parallel()
	d := doc(t)
	s := at(d, "components", "schemas")
	tests := []struct {
		name string
		got  any
		want any
	}{
		{"nullable text", at(s, "Contact", "properties", "phone", "type"), []any{"string", "null"}},
		{"nullable reference", at(s, "Contact", "properties", "company_id", "type"), []any{"integer", "null"}},
		{"name limit", at(s, "ContactInput", "properties", "first_name", "maxLength"), 100.0},
		{"text limit", at(s, "ContactInput", "properties", "email", "maxLength"), 255.0},
		{"content limit", at(s, "LeadInput", "properties", "notes", "maxLength"), 100000.0},
		{"status enum", at(s, "Lead", "properties", "status", "enum"), []any{"new", "contacted", "qualified", "disqualified"}},
		{"nullable enum lists null", at(s, "LeadInput", "properties", "status", "enum"), []any{"new", "contacted", "qualified", "disqualified", nil}},
		{"date-time", at(s, "Deal", "properties", "created_at", "format"), "date-time"},
		{"date", at(s, "Deal", "properties", "expected_close_date", "format"), "date"},
		{"email", at(s, "User", "properties", "email", "format"), "email"},
		{"allowed_origins", at(s, "APIKey", "properties", "allowed_origins", "type"), "array"},
		{"stage outcome", at(s, "Stage", "properties", "outcome", "enum"), []any{"open", "won", "lost"}},
		{"qualify answer", at(s, "Qualified", "required"), []any{"success", "message", "contact_id", "company_id", "deal_id", "data"}},
		{"login request", at(s, "LoginRequest", "required"), []any{"email", "password"}},
		{"session answer", at(s, "Session", "properties", "user", "$ref"), "#/components/schemas/User"},
		{"page size", at(s, "ContactPage", "properties", "per_page", "maximum"), 100.0},
		{"nullable record", at(s, "Contract", "properties", "executed_file", "anyOf"), []any{
			map[string]any{"$ref": "#/components/schemas/ExecutedFile"}, map[string]any{"type": "null"}}},
		{"decimal as number or string", at(s, "DealInput", "properties", "value", "type"), []any{"number", "string", "null"}},
		{"import encodings", at(s, "ImportResult", "properties", "encoding", "enum"), []any{
			csvx.EncUTF8, csvx.EncUTF8BOM, csvx.EncUTF16LE, csvx.EncUTF16BE, csvx.EncWindows1252}},
		{"import delimiters", at(s, "ImportResult", "properties", "delimiter", "enum"), []any{
			string(csvx.Delimiter([]byte("a,b"))), string(csvx.Delimiter([]byte("a;b"))), string(csvx.Delimiter([]byte("a\tb")))}},
		{"import answer", at(s, "ImportResult", "required"), []any{
			"success", "message", "imported", "skipped", "errors", "encoding", "delimiter", "ignored_columns", "dry_run"}},
		{"import form fields", slices.Sorted(maps.Keys(at(s, "ImportForm", "properties").(map[string]any))), []string{
			csvx.DryRunField, csvx.FileField, csvx.MappingField}},
		{"import form file", at(s, "ImportForm", "required"), []any{csvx.FileField}},
		{"message id form", at(s, "EmailSummary", "properties", "message_id", "pattern"), `^<[\s\S]+>$`},
	}
	for _, tc := range tests {
		if diff := cmp.Diff(tc.want, tc.got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, diff)
		}
	}
}

func TestOpenAPIOperations(t *testing.T) {
	t.Parallel()
	d := doc(t)
	params := map[string]any{}
	for _, p := range at(d, "paths", "/contacts", "get", "parameters").([]any) {
		params[at(p, "name").(string)] = at(p, "schema")
	}
	if diff := cmp.Diff(100.0, at(params["per_page"], "maximum")); diff != "" {
		t.Errorf("per_page maximum (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]any{"me", "team", "company"}, at(params["scope"], "enum")); diff != "" {
		t.Errorf("scope enum (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]any{"name", "email", "phone", "company_name", "status", "created_at", "updated_at"}, at(params["sort_by"], "enum")); diff != "" {
		t.Errorf("sort_by enum (-want +got):\n%s", diff)
	}
	// Every list an integration syncs documents the sync filter.
	for _, path := range []string{"/contacts", "/contacts/export", "/companies", "/leads", "/leads/export", "/deals", "/contracts"} {
		got := map[string]any{}
		for _, p := range at(d, "paths", path, "get", "parameters").([]any) {
			got[at(p, "name").(string)] = at(p, "schema")
		}
		if diff := cmp.Diff("date-time", at(got["updated_since"], "format")); diff != "" {
			t.Errorf("%s updated_since format (-want +got):\n%s", path, diff)
		}
		if diff := cmp.Diff(1.0, at(got["after_id"], "minimum")); diff != "" {
			t.Errorf("%s after_id minimum (-want +got):\n%s", path, diff)
		}
		if enum, _ := at(got["sort_by"], "enum").([]any); !slices.Contains(enum, any("updated_at")) {
			t.Errorf("%s sort_by enum %v lacks updated_at", path, enum)
		}
	}
	for path, item := range at(d, "paths").(map[string]any) {
		for method, o := range item.(map[string]any) {
			name := strings.ToUpper(method) + " " + path
			responses := at(o, "responses").(map[string]any)
			if responses["500"] == nil || responses["429"] == nil {
				t.Errorf("%s: no 500 or 429", name)
			}
			for code, r := range responses {
				if code == "201" && at(r, "headers", "Location") == nil {
					t.Errorf("%s: 201 without Location", name)
				}
				if strings.HasPrefix(code, "2") && at(r, "headers", "RateLimit-Remaining") == nil {
					t.Errorf("%s: %s without RateLimit headers", name, code)
				}
				if mt := at(r, "content", "application/json"); mt != nil && at(mt, "example") == nil {
					t.Errorf("%s: %s answer without an example", name, code)
				}
			}
			if mt := at(o, "requestBody", "content", "application/json"); mt != nil && at(mt, "example") == nil {
				t.Errorf("%s: request without an example", name)
			}
		}
	}
	for _, p := range []string{"/contacts/import", "/leads/import"} {
		if diff := cmp.Diff("#/components/schemas/ImportForm", at(d, "paths", p, "post", "requestBody", "content", "multipart/form-data", "schema", "$ref")); diff != "" {
			t.Errorf("%s form (-want +got):\n%s", p, diff)
		}
		if desc, _ := at(d, "paths", p, "post", "description").(string); !strings.Contains(desc, "docs/import.md") {
			t.Errorf("%s: description does not point to docs/import.md: %q", p, desc)
		}
	}
	for _, p := range []string{"/contacts/template", "/leads/template"} {
		if at(d, "paths", p, "get", "responses", "200", "headers", "Link") == nil {
			t.Errorf("%s: 200 without Link", p)
		}
	}
	if diff := cmp.Diff("#/components/headers/Retry-After", at(d, "components", "responses", "429", "headers", "Retry-After", "$ref")); diff != "" {
		t.Errorf("429 Retry-After (-want +got):\n%s", diff)
	}
}
