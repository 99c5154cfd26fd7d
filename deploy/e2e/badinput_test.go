package e2e

import (
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/opencrm/crm/pkg/problem"
	"github.com/opencrm/crm/pkg/problem/problemtest"
)

// TestSchemaViolationsRefused sends bodies the OpenAPI document declares
// invalid and checks the services refuse each with the status and problem
// the handler always gave, so a client validating against the document
// and the server agree.
func TestSchemaViolationsRefused(t *testing.T) {
	t.Parallel()
	adm := admin(t)
	long := strings.Repeat("x", 101)
	tests := []struct {
		name, method, template, path string
		body                         any
		status                       int
		code                         string
		fields                       []string
	}{
		{"empty first name", "POST", "/contacts", "/contacts", map[string]any{"first_name": "", "last_name": "L"}, 422, "validation_failed", []string{"first_name"}},
		{"first name over 100", "POST", "/contacts", "/contacts", map[string]any{"first_name": long, "last_name": "L"}, 422, "validation_failed", []string{"first_name"}},
		{"contact status not in enum", "POST", "/contacts", "/contacts", map[string]any{"first_name": "F", "last_name": "L", "status": "gone"}, 422, "validation_failed", []string{"status"}},
		{"lead without names", "POST", "/leads", "/leads", map[string]any{"email": "a@b.test"}, 422, "validation_failed", []string{"first_name", "last_name"}},
		{"lead status not in enum", "POST", "/leads", "/leads", map[string]any{"first_name": "F", "last_name": "L", "status": "won"}, 422, "validation_failed", []string{"status"}},
		{"deal without title", "POST", "/deals", "/deals", map[string]any{"value": "10.00"}, 422, "validation_failed", []string{"title"}},
		{"team name empty", "POST", "/teams", "/teams", map[string]any{"name": ""}, 422, "validation_failed", []string{"name"}},
		{"key limit below 1", "POST", "/api-keys", "/api-keys", map[string]any{"name": "k", "rate_limit_per_minute": 0}, 422, "validation_failed", []string{"rate_limit_per_minute"}},
		{"stage outcome not in enum", "POST", "/deal-stages", "/deal-stages", map[string]any{"name": "S", "outcome": "maybe"}, 422, "validation_failed", []string{"outcome"}},
		{"company name as number", "POST", "/companies", "/companies", map[string]any{"name": 12}, 422, "validation_failed", []string{"name"}},
		{"contact body not an object", "POST", "/contacts", "/contacts", []any{"x"}, 400, "malformed_json", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if err := stack.Contract.ValidateRequest(tc.method, tc.template, tc.body); err == nil {
				t.Fatalf("the document accepts %v", tc.body)
			}
			r, err := adm.Do(tc.method, tc.path, tc.body)
			if err != nil {
				t.Fatal(err)
			}
			wantProblemBody(t, r, tc.status, tc.code, tc.fields)
		})
	}
}

// wantProblemBody checks a problem+json answer: status, content type, type
// URI, code and the invalid fields in order.
func wantProblemBody(t *testing.T, r *Response, status int, code string, fields []string) {
	t.Helper()
	b := problemtest.Want(t, r.Status, r.Header, r.Body, status, code, fields...)
	got := map[string]any{"type": b.Type, "title": b.Title}
	want := map[string]any{"type": "/docs/problems#" + code, "title": http.StatusText(status)}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("problem (-want +got):\n%s", diff)
	}
	if len(fields) == 0 && len(b.Errors) > 0 {
		t.Errorf("invalid fields (-want +got):\n%s", cmp.Diff([]string(nil), fieldNames(b.Errors)))
	}
}

// fieldNames lists the fields of a problem's errors, in order.
func fieldNames(errs []problem.FieldError) []string {
	var names []string
	for _, e := range errs {
		names = append(names, e.Field)
	}
	return names
}
