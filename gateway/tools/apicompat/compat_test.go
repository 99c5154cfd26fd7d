package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// released is the committed document of the last release; each case
// edits a copy of it as the code serving a breaking (or an additive)
// change would, and the gate must tell.
const released = "../../../api/released/openapi.json"

type doc = map[string]any

func readReleased(t *testing.T) doc {
	t.Helper()
	b, err := os.ReadFile(released)
	if err != nil {
		t.Fatal(err)
	}
	var d doc
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	return d
}

func encode(t *testing.T, d doc) []byte {
	t.Helper()
	b, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// at walks a document by keys (maps) and indexes (given as ints).
func at(t *testing.T, d any, keys ...any) any {
	t.Helper()
	for _, k := range keys {
		switch k := k.(type) {
		case string:
			m, ok := d.(doc)
			if !ok || m[k] == nil {
				t.Fatalf("no %q in the document at %v", k, keys)
			}
			d = m[k]
		case int:
			d = d.([]any)[k]
		}
	}
	return d
}

func param(t *testing.T, d doc, path, method, name string) doc {
	t.Helper()
	for _, p := range at(t, d, "paths", path, method, "parameters").([]any) {
		if p.(doc)["name"] == name {
			return p.(doc)
		}
	}
	t.Fatalf("%s %s has no parameter %s", method, path, name)
	return nil
}

// removeParam deletes a parameter of an operation.
func removeParam(t *testing.T, d doc, path, method, name string) {
	t.Helper()
	param(t, d, path, method, name)
	op := at(t, d, "paths", path, method).(doc)
	op["parameters"] = slices.DeleteFunc(op["parameters"].([]any), func(p any) bool { return p.(doc)["name"] == name })
}

// removeProperty deletes a property of a components schema, from its
// required list too.
func removeProperty(t *testing.T, d doc, schema, name string) {
	t.Helper()
	s := at(t, d, "components", "schemas", schema).(doc)
	at(t, s, "properties", name)
	delete(s["properties"].(doc), name)
	if req, ok := s["required"].([]any); ok {
		s["required"] = slices.DeleteFunc(req, func(v any) bool { return v == name })
	}
}

// deprecateProperty marks a property of a components schema deprecated,
// with a sunset date unless it is "".
func deprecateProperty(t *testing.T, d doc, schema, name, sunset string) {
	t.Helper()
	p := at(t, d, "components", "schemas", schema, "properties", name).(doc)
	p["deprecated"] = true
	if sunset != "" {
		p["x-sunset"] = sunset
	}
}

var now = time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)

// want is a finding the gate must report: its operation, rule and a part
// of its message naming the field, parameter or value.
type want struct{ op, id, text string }

func TestCheckBreaking(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		// base edits the released document first (a deprecation it
		// carried), revision edits the copy served now.
		base     func(t *testing.T, d doc)
		revision func(t *testing.T, d doc)
		want     []want
	}{
		{
			name: "removed response field",
			revision: func(t *testing.T, d doc) {
				removeProperty(t, d, "Contact", "job_title")
			},
			want: []want{
				{"GET /contacts/{id}", "response-required-property-removed", "data/job_title"},
				{"GET /contacts", "response-required-property-removed", "data/items/job_title"},
			},
		},
		{
			name: "removed optional response field",
			base: func(t *testing.T, d doc) {
				s := at(t, d, "components", "schemas", "Contact").(doc)
				s["required"] = slices.DeleteFunc(s["required"].([]any), func(v any) bool { return v == "job_title" })
			},
			revision: func(t *testing.T, d doc) {
				removeProperty(t, d, "Contact", "job_title")
			},
			want: []want{{"GET /contacts/{id}", "response-optional-property-removed", "data/job_title"}},
		},
		{
			name: "narrowed enum of a query parameter",
			revision: func(t *testing.T, d doc) {
				s := param(t, d, "/leads", "get", "status")["schema"].(doc)
				s["enum"] = []any{"new", "contacted", "qualified"}
			},
			want: []want{{"GET /leads", "request-parameter-enum-value-removed", "disqualified"}},
		},
		{
			name: "narrowed enum of a request property",
			revision: func(t *testing.T, d doc) {
				p := at(t, d, "components", "schemas", "DealInput", "properties", "status").(doc)
				p["enum"] = []any{"open", "won", nil}
			},
			want: []want{{"POST /deals", "request-property-enum-value-removed", "lost"}},
		},
		{
			name: "new required parameter",
			revision: func(t *testing.T, d doc) {
				op := at(t, d, "paths", "/contacts", "get").(doc)
				op["parameters"] = append(op["parameters"].([]any), doc{
					"name": "tenant", "in": "query", "required": true, "schema": doc{"type": "string"}})
			},
			want: []want{{"GET /contacts", "new-required-request-parameter", "tenant"}},
		},
		{
			name: "optional parameter became required",
			revision: func(t *testing.T, d doc) {
				param(t, d, "/contacts", "get", "search")["required"] = true
			},
			want: []want{{"GET /contacts", "request-parameter-became-required", "search"}},
		},
		{
			name: "removed field of a webhook's body",
			revision: func(t *testing.T, d doc) {
				removeProperty(t, d, "DeletedRecord", "id")
			},
			want: []want{{"POST webhook:contact.deleted", "request-property-removed", "DeletedRecord]/id"}},
		},
		{
			name: "removed operation without deprecation",
			revision: func(t *testing.T, d doc) {
				delete(at(t, d, "paths", "/contacts/{id}").(doc), "delete")
			},
			want: []want{{"DELETE /contacts/{id}", "api-removed-without-deprecation", ""}},
		},
		{
			name: "removed before its sunset",
			base: func(t *testing.T, d doc) {
				op := at(t, d, "paths", "/contacts/{id}", "delete").(doc)
				op["deprecated"], op["x-sunset"] = true, "2099-01-01"
			},
			revision: func(t *testing.T, d doc) {
				delete(at(t, d, "paths", "/contacts/{id}").(doc), "delete")
			},
			want: []want{{"DELETE /contacts/{id}", "api-removed-before-sunset", "2099-01-01"}},
		},
		{
			name: "deprecated property removed before its sunset",
			base: func(t *testing.T, d doc) {
				deprecateProperty(t, d, "Contact", "job_title", "2099-01-01")
			},
			revision: func(t *testing.T, d doc) {
				removeProperty(t, d, "Contact", "job_title")
			},
			want: []want{{"GET /contacts/{id}", "response-required-property-removed-before-sunset", "data/job_title"}},
		},
		{
			// route.Param.Deprecated writes deprecated and x-sunset on
			// the parameter, as on an operation.
			name: "deprecated query parameter removed before its sunset",
			base: func(t *testing.T, d doc) {
				p := param(t, d, "/contacts", "get", "search")
				p["deprecated"], p["x-sunset"] = true, "2099-01-01"
			},
			revision: func(t *testing.T, d doc) {
				removeParam(t, d, "/contacts", "get", "search")
			},
			want: []want{{"GET /contacts", "request-parameter-removed-before-sunset", "search"}},
		},
		{
			name: "query parameter deprecated with a sunset less than six months away",
			revision: func(t *testing.T, d doc) {
				p := param(t, d, "/contacts", "get", "search")
				p["deprecated"], p["x-sunset"] = true, time.Now().AddDate(0, 1, 0).Format(time.DateOnly)
			},
			want: []want{{"GET /contacts", "request-parameter-sunset-date-too-small", "search"}},
		},
		{
			// What the deprecated and sunset tags of a wire type write.
			name: "property deprecated with a sunset less than six months away",
			revision: func(t *testing.T, d doc) {
				deprecateProperty(t, d, "Contact", "job_title", time.Now().AddDate(0, 1, 0).Format(time.DateOnly))
			},
			want: []want{{"GET /contacts/{id}", "response-property-sunset-date-too-small", "data/job_title"}},
		},
		{
			name: "property deprecated without a sunset",
			revision: func(t *testing.T, d doc) {
				deprecateProperty(t, d, "Contact", "job_title", "")
			},
			want: []want{{"GET /contacts/{id}", "response-property-deprecated-sunset-missing", "data/job_title"}},
		},
		{
			name: "removed after a deprecation without a sunset",
			base: func(t *testing.T, d doc) {
				// Deprecated in 0.2.0, released without a sunset.
				delete(at(t, d, "components", "schemas", "Webhook", "properties", "secret_prefix").(doc), "x-sunset")
			},
			revision: func(t *testing.T, d doc) {
				removeProperty(t, d, "Webhook", "secret_prefix")
			},
			want: []want{{"GET /webhooks/{id}", "response-required-property-removed-with-deprecation", "data/secret_prefix"}},
		},
		{
			name: "operation removed after a deprecation without a sunset",
			base: func(t *testing.T, d doc) {
				at(t, d, "paths", "/contacts/{id}", "delete").(doc)["deprecated"] = true
			},
			revision: func(t *testing.T, d doc) {
				delete(at(t, d, "paths", "/contacts/{id}").(doc), "delete")
			},
			want: []want{{"DELETE /contacts/{id}", "api-removed-with-deprecation", ""}},
		},
		{
			name: "deprecated with a sunset less than six months away",
			revision: func(t *testing.T, d doc) {
				op := at(t, d, "paths", "/contacts/{id}", "delete").(doc)
				op["deprecated"], op["x-sunset"] = true, time.Now().AddDate(0, 1, 0).Format(time.DateOnly)
			},
			want: []want{{"DELETE /contacts/{id}", "api-sunset-date-too-small", ""}},
		},
		{
			name: "deprecated without a sunset",
			revision: func(t *testing.T, d doc) {
				at(t, d, "paths", "/contacts/{id}", "delete").(doc)["deprecated"] = true
			},
			want: []want{{"DELETE /contacts/{id}", "api-deprecated-sunset-missing", ""}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			base := readReleased(t)
			if tc.base != nil {
				tc.base(t, base)
			}
			b := encode(t, base)
			var rev doc
			if err := json.Unmarshal(b, &rev); err != nil {
				t.Fatal(err)
			}
			tc.revision(t, rev)
			got, err := Check(b, encode(t, rev), now)
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.want {
				if !slices.ContainsFunc(got, func(f Finding) bool {
					return f.Operation == w.op && f.ID == w.id && strings.Contains(f.Text, w.text)
				}) {
					t.Errorf("no finding %s %s naming %q among %d:\n%s", w.op, w.id, w.text, len(got), list(got))
				}
			}
			for _, f := range got {
				if !strings.Contains(f.String(), f.Operation) || f.Text == "" {
					t.Errorf("finding %+v does not name its operation and change", f)
				}
			}
		})
	}
}

func TestCheckCompatible(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		base     func(t *testing.T, d doc)
		revision func(t *testing.T, d doc)
	}{
		{name: "unchanged", revision: func(t *testing.T, d doc) {}},
		{
			name: "additive: a new operation, response field, optional parameter and enum value",
			revision: func(t *testing.T, d doc) {
				paths := at(t, d, "paths").(doc)
				if paths["/contacts/{id}/lookalikes"] != nil {
					t.Fatal("the new operation exists already")
				}
				paths["/contacts/{id}/lookalikes"] = doc{"get": doc{
					"operationId": "getContactsIdLookalikes", "summary": "Lookalikes", "tags": []any{"Contacts"},
					"parameters": []any{doc{"name": "id", "in": "path", "required": true, "schema": doc{"type": "integer"}}},
					"responses": doc{"200": doc{"description": "Success", "content": doc{"application/json": doc{
						"schema": doc{"$ref": "#/components/schemas/ContactRecord"}}}}}}}
				at(t, d, "components", "schemas", "Deal", "properties").(doc)["score"] =
					doc{"type": "integer", "minimum": 0}
				op := at(t, d, "paths", "/contacts", "get").(doc)
				op["parameters"] = append(op["parameters"].([]any), doc{
					"name": "tag", "in": "query", "required": false, "schema": doc{"type": "string"}})
				s := at(t, d, "components", "schemas", "Deal", "properties", "status").(doc)
				s["enum"] = append(s["enum"].([]any), "abandoned")
				s = param(t, d, "/leads", "get", "status")["schema"].(doc)
				s["enum"] = append(s["enum"].([]any), "archived")
			},
		},
		{
			name: "additive: a new field in a webhook's body",
			revision: func(t *testing.T, d doc) {
				s := at(t, d, "components", "schemas", "DeletedEvent").(doc)
				s["properties"].(doc)["reason"] = doc{"type": "string"}
				s["required"] = append(s["required"].([]any), "reason")
			},
		},
		{
			name: "a deprecated operation removed after its sunset",
			base: func(t *testing.T, d doc) {
				op := at(t, d, "paths", "/contacts/{id}", "delete").(doc)
				op["deprecated"], op["x-sunset"] = true, "2026-06-01"
			},
			revision: func(t *testing.T, d doc) {
				delete(at(t, d, "paths", "/contacts/{id}").(doc), "delete")
			},
		},
		{
			name: "a deprecated response field removed after its sunset",
			base: func(t *testing.T, d doc) {
				deprecateProperty(t, d, "Contact", "job_title", "2026-06-01")
			},
			revision: func(t *testing.T, d doc) {
				removeProperty(t, d, "Contact", "job_title")
			},
		},
		{
			name: "a deprecated optional response field removed after its sunset",
			base: func(t *testing.T, d doc) {
				s := at(t, d, "components", "schemas", "Contact").(doc)
				s["required"] = slices.DeleteFunc(s["required"].([]any), func(v any) bool { return v == "job_title" })
				deprecateProperty(t, d, "Contact", "job_title", "2026-06-01")
			},
			revision: func(t *testing.T, d doc) {
				removeProperty(t, d, "Contact", "job_title")
			},
		},
		{
			name: "a deprecated query parameter removed after its sunset",
			base: func(t *testing.T, d doc) {
				p := param(t, d, "/contacts", "get", "search")
				p["deprecated"], p["x-sunset"] = true, "2026-06-01"
			},
			revision: func(t *testing.T, d doc) {
				removeParam(t, d, "/contacts", "get", "search")
			},
		},
		{
			name: "deprecated with a sunset six months away",
			revision: func(t *testing.T, d doc) {
				op := at(t, d, "paths", "/contacts/{id}", "delete").(doc)
				op["deprecated"], op["x-sunset"] = true, time.Now().AddDate(0, 7, 0).Format(time.DateOnly)
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			base := readReleased(t)
			if tc.base != nil {
				tc.base(t, base)
			}
			b := encode(t, base)
			var rev doc
			if err := json.Unmarshal(b, &rev); err != nil {
				t.Fatal(err)
			}
			tc.revision(t, rev)
			got, err := Check(b, encode(t, rev), now)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) > 0 {
				t.Errorf("%d breaking change(s) reported, want none:\n%s", len(got), list(got))
			}
		})
	}
}

// TestRun: the command's exit status and what it prints, for a document
// unchanged, one with a field removed, and files that do not load.
func TestRun(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	d := readReleased(t)
	removeProperty(t, d, "Contact", "job_title")
	broken := filepath.Join(dir, "broken.json")
	if err := os.WriteFile(broken, encode(t, d), 0o644); err != nil {
		t.Fatal(err)
	}
	garbage := filepath.Join(dir, "garbage.json")
	if err := os.WriteFile(garbage, []byte("{not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name           string
		base, revision string
		code           int
		stdout, stderr []string
	}{
		{"same", released, released, 0, []string{"apicompat: no breaking change"}, nil},
		{"removed field", released, broken, 1, nil, []string{"breaking change(s)", "GET /contacts/{id}: response-required-property-removed:", "data/job_title"}},
		{"missing file", released, filepath.Join(dir, "none.json"), 2, nil, []string{"none.json"}},
		{"not a document", released, garbage, 2, nil, []string{"revision document"}},
		{"no arguments", "", "", 2, nil, []string{"usage: apicompat"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var stdout, stderr bytes.Buffer
			if code := run(tc.base, tc.revision, now, &stdout, &stderr); code != tc.code {
				t.Errorf("exit %d, want %d; stderr:\n%s", code, tc.code, stderr.String())
			}
			for _, s := range tc.stdout {
				if !strings.Contains(stdout.String(), s) {
					t.Errorf("stdout lacks %q:\n%s", s, stdout.String())
				}
			}
			for _, s := range tc.stderr {
				if !strings.Contains(stderr.String(), s) {
					t.Errorf("stderr lacks %q:\n%s", s, stderr.String())
				}
			}
		})
	}
}

func list(fs []Finding) string {
	var b strings.Builder
	for _, f := range fs {
		b.WriteString("  " + f.String() + "\n")
	}
	return b.String()
}
