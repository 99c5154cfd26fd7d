// Package problemtest asserts problem+json answers in tests, so every
// service checks an error the same way: status, media type, code and, for
// a 422, the invalid fields in order.
package problemtest

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/opencrm/crm/pkg/problem"
)

// Want fails t unless the answer (status, header, body) is a problem with
// the wanted status and code and, when fields are given, exactly those
// invalid fields in order. It returns the decoded problem for further
// checks (detail, extensions).
func Want(t testing.TB, status int, header http.Header, body []byte, wantStatus int, code string, fields ...string) problem.Body {
	t.Helper()
	if status != wantStatus {
		t.Fatalf("status = %d, want %d; body %s", status, wantStatus, body)
	}
	if ct := header.Get("Content-Type"); ct != problem.ContentType {
		t.Fatalf("content type = %q, want %q; body %s", ct, problem.ContentType, body)
	}
	var b problem.Body
	if err := json.Unmarshal(body, &b); err != nil {
		t.Fatalf("decode problem %s: %v", body, err)
	}
	if b.Code != code {
		t.Fatalf("code = %q, want %q; body %s", b.Code, code, body)
	}
	if b.Status != wantStatus {
		t.Fatalf("body status = %d, want %d", b.Status, wantStatus)
	}
	if len(fields) > 0 {
		var got []string
		for _, fe := range b.Errors {
			got = append(got, fe.Field)
		}
		if diff := cmp.Diff(fields, got); diff != "" {
			t.Fatalf("invalid fields (-want +got):\n%s", diff)
		}
	}
	return b
}
