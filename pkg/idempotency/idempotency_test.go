package idempotency_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/opencrm/crm/pkg/idempotency"
	"github.com/opencrm/crm/pkg/problem"
)

func TestKeyMustBePrintableASCII(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, key, want string
	}{
		{"uuid", "0b7c1f1e-5a0b-4c55-9a51-2f0f5c3f9a11", ""},
		{"absent", "", ""},
		{"invalid utf8", "k\xff", "must be printable ASCII (a UUID, for example)"},
		{"tab", "a\tb", "must be printable ASCII (a UUID, for example)"},
		{"too long", strings.Repeat("k", idempotency.MaxKeyLength+1), fmt.Sprintf("must be at most %d characters", idempotency.MaxKeyLength)},
	}
	for _, tt := range tests {
		r := httptest.NewRequest(http.MethodPost, "/x", nil)
		r.Header[idempotency.Header] = []string{tt.key}
		got, err := idempotency.Key(r)
		var msg string
		if err != nil {
			p := problem.From(err)
			if p.Status != 422 || len(p.Errors) != 1 || p.Errors[0].Field != idempotency.Header {
				t.Fatalf("%s: %d %+v", tt.name, p.Status, p.Errors)
			}
			msg = p.Errors[0].Message
		} else if got != tt.key {
			t.Errorf("%s: key %q", tt.name, got)
		}
		if msg != tt.want {
			t.Errorf("%s: %q, want %q", tt.name, msg, tt.want)
		}
	}
}
