package gateway

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/opencrm/crm/pkg/contract/route"
	"github.com/opencrm/crm/pkg/contract/webhooksapi"
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
		{"decimal input: a string with a pattern, or a number", at(s, "DealInput", "properties", "value", "anyOf"), []any{
			map[string]any{"type": []any{"string", "null"}, "pattern": `^[0-9]{1,15}(\.[0-9]{1,2})?$`}, map[string]any{"type": "number"}}},
		{"required decimal input", at(s, "LineItemInput", "properties", "quantity", "anyOf"), []any{
			map[string]any{"type": "string", "pattern": `^[0-9]{1,10}(\.[0-9]{1,4})?$`}, map[string]any{"type": "number"}}},
		{"decimal example is the string", at(s, "LineItemInput", "properties", "unit_price", "examples"), []any{"1200.00"}},
		{"decimal answer is a string", at(s, "Deal", "properties", "value", "type"), "string"},
		{"import encodings", at(s, "ContactImportResult", "properties", "encoding", "enum"), []any{
			csvx.EncUTF8, csvx.EncUTF8BOM, csvx.EncUTF16LE, csvx.EncUTF16BE, csvx.EncWindows1252}},
		{"import delimiters", at(s, "LeadImportResult", "properties", "delimiter", "pattern"), `^[,;\t]$`},
		{"import answer", at(s, "ContactImportResult", "required"), []any{
			"success", "message", "imported", "skipped", "errors", "encoding", "delimiter", "ignored_columns", "dry_run"}},
		{"lead import answer", at(s, "LeadImportResult", "required"), []any{
			"success", "message", "imported", "skipped", "errors", "encoding", "delimiter", "ignored_columns", "dry_run"}},
		{"import form fields", slices.Sorted(maps.Keys(at(s, "ImportForm", "properties").(map[string]any))), []string{
			csvx.DryRunField, csvx.FileField, csvx.MappingField}},
		{"import form file", at(s, "ImportForm", "required"), []any{csvx.FileField}},
		{"message id form", at(s, "EmailSummary", "properties", "message_id", "pattern"), `^<[\s\S]+>$`},
		{"feed items", at(s, "EventFeed", "properties", "data", "items", "$ref"), "#/components/schemas/Event"},
		{"event variants", at(s, "Event", "oneOf"), []any{
			map[string]any{"$ref": "#/components/schemas/ContactEvent"}, map[string]any{"$ref": "#/components/schemas/DeletedEvent"},
			map[string]any{"$ref": "#/components/schemas/CompanyEvent"}, map[string]any{"$ref": "#/components/schemas/MergedEvent"},
			map[string]any{"$ref": "#/components/schemas/LeadEvent"},
			map[string]any{"$ref": "#/components/schemas/DealEvent"}, map[string]any{"$ref": "#/components/schemas/ContractEvent"},
			map[string]any{"$ref": "#/components/schemas/PropertyEvent"}}},
		{"event discriminator", at(s, "Event", "discriminator", "propertyName"), "type"},
		{"deleted event mapping", at(s, "Event", "discriminator", "mapping", webhooksapi.DealDeleted), "#/components/schemas/DeletedEvent"},
		{"deleted event types", at(s, "DeletedEvent", "properties", "type", "enum"), []any{
			webhooksapi.ContactDeleted, webhooksapi.CompanyDeleted, webhooksapi.LeadDeleted, webhooksapi.DealDeleted, webhooksapi.ContractDeleted}},
		{"ping is no component", s.(map[string]any)["PingEvent"], nil},
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

// TestOpenAPIDelimiterPattern checks the delimiter's pattern against what
// the CSV reader reports: every delimiter it can pick matches, nothing
// else does.
func TestOpenAPIDelimiterPattern(t *testing.T) {
	t.Parallel()
	expr, _ := at(doc(t), "components", "schemas", "ContactImportResult", "properties", "delimiter", "pattern").(string)
	if expr == "" {
		t.Fatal("the delimiter has no pattern")
	}
	pattern := regexp.MustCompile(expr)
	for _, head := range []string{"a,b", "a;b", "a\tb", "a|b", "ab"} {
		d := string(csvx.Delimiter([]byte(head)))
		if !pattern.MatchString(d) {
			t.Errorf("delimiter %q of %q does not match %s", d, head, pattern)
		}
	}
	for _, d := range []string{"", "|", " ", "\\t", ",;", "tab"} {
		if pattern.MatchString(d) {
			t.Errorf("pattern %s accepts %q", pattern, d)
		}
	}
}

// TestOpenAPIStatuses checks the statuses each kind of operation
// declares: the gateway's own (429, 431, 5xx) on every one, the
// credential's on protected ones, 401 on login and refresh (which refuse
// a bad password or refresh token; deploy/e2e checks it against the
// identity service), and the conflicts of the operations that have them.
func TestOpenAPIStatuses(t *testing.T) {
	t.Parallel()
	d := doc(t)
	gatewayOwn := []string{"429", "431", "500", "502", "503", "504"}
	body := []string{"400", "408", "413", "415", "422"}
	tests := []struct {
		op   string
		want [][]string
	}{
		{"POST /auth/login", [][]string{{"200", "401"}, gatewayOwn, body}},
		{"POST /auth/refresh", [][]string{{"200", "401"}, gatewayOwn, body}},
		{"POST /auth/logout", [][]string{{"200"}, gatewayOwn, body}},
		{"GET /auth/jwks", [][]string{{"200"}, gatewayOwn}},
		{"GET /auth/me", [][]string{{"200", "401", "403"}, gatewayOwn}},
		{"GET /contacts/{id}", [][]string{{"200", "400", "401", "403", "404", "422"}, gatewayOwn}}, // 400, 422: its id_property query
		{"GET /contacts", [][]string{{"200", "400", "401", "403", "422"}, gatewayOwn}},
		{"POST /webhooks", [][]string{{"201", "401", "403", "409"}, gatewayOwn, body}},
		{"PUT /webhooks/{id}", [][]string{{"200", "401", "403", "404", "409"}, gatewayOwn, body}},
		{"POST /public/leads", [][]string{{"201", "202", "401", "403", "409"}, gatewayOwn, body}},
	}
	for _, tc := range tests {
		method, path, _ := strings.Cut(tc.op, " ")
		got := slices.Sorted(maps.Keys(at(d, "paths", path, strings.ToLower(method), "responses").(map[string]any)))
		want := slices.Compact(slices.Sorted(slices.Values(slices.Concat(tc.want...))))
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s statuses (-want +got):\n%s", tc.op, diff)
		}
	}
	for path, item := range at(d, "paths").(map[string]any) {
		for method, o := range item.(map[string]any) {
			if ref := at(o, "responses", "431", "$ref"); ref != "#/components/responses/431" {
				t.Errorf("%s %s: 431 is %v, not the shared response", method, path, ref)
			}
		}
	}
	if diff := cmp.Diff("#/components/schemas/Problem", at(d, "components", "responses", "431", "content", "application/problem+json", "schema", "$ref")); diff != "" {
		t.Errorf("431 body (-want +got):\n%s", diff)
	}
}

// isRead is a route that changes nothing: a GET, or a POST that only reads
// (a batch read).
func isRead(op route.Route) bool { return op.Method == "GET" || op.ReadOnly }

// TestOpenAPIMessages checks the messages the examples show: a read
// shows none, and every write answering with a message documents its
// declaration's (route.Route.Message, the string the service answers
// with, so the two cannot differ).
func TestOpenAPIMessages(t *testing.T) {
	t.Parallel()
	d := doc(t)
	// The writes whose services answer without a message.
	silentWrites := map[string]bool{"POST /auth/login": true, "POST /auth/refresh": true, "POST /webhooks/{id}/test": true}
	for _, op := range Routes() {
		name := op.Method + " " + op.Path
		responses := at(d, "paths", op.Path, strings.ToLower(op.Method), "responses").(map[string]any)
		for status, r := range responses {
			ex, ok := at(r, "content", "application/json", "example").(map[string]any)
			if !ok || !strings.HasPrefix(status, "2") {
				continue
			}
			msg, has := ex["message"].(string)
			switch {
			case isRead(op) && has:
				t.Errorf("%s %s: a read's example shows message %q", name, status, msg)
			case !isRead(op) && !has && !silentWrites[name]:
				t.Errorf("%s %s: the example of a write shows no message", name, status)
			case has && msg != successMessage(op, status):
				t.Errorf("%s %s: example message %q, declared %q", name, status, msg, successMessage(op, status))
			}
		}
	}
}

// TestOpenAPILicense checks info.license against the repository's LICENSE.
func TestOpenAPILicense(t *testing.T) {
	t.Parallel()
	text, err := os.ReadFile(filepath.Join("..", "..", "..", "LICENSE"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(text), "Apache License") || !strings.Contains(string(text), "Version 2.0, January 2004") {
		t.Fatalf("LICENSE is no longer the Apache License 2.0; update info.license")
	}
	if diff := cmp.Diff(map[string]any{"name": "Apache License 2.0", "identifier": "Apache-2.0"}, at(doc(t), "info", "license")); diff != "" {
		t.Errorf("info.license (-want +got):\n%s", diff)
	}
}
