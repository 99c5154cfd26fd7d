package idempotency_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/opencrm/crm/pkg/idempotency"
	"github.com/opencrm/crm/pkg/problem"
	"github.com/opencrm/crm/pkg/testdb"
)

func TestRunOncePerKey(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := testdb.New(t, "idemtest", idempotency.Migrate, idempotency.Migrations)
	var runs atomic.Int32
	fn := func(tx pgx.Tx) (int, any, error) {
		n := runs.Add(1)
		return http.StatusCreated, map[string]int32{"id": n}, nil
	}
	var wg sync.WaitGroup
	results := make([]idempotency.Result, 8)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := idempotency.Run(ctx, d, "lead-1-contact", map[string]string{"a": "b"}, fn)
			if err != nil {
				t.Error(err)
			}
			results[i] = res
		}()
	}
	wg.Wait()
	if runs.Load() != 1 {
		t.Fatalf("ran %d times", runs.Load())
	}
	replays := 0
	for _, r := range results {
		if string(r.Body) != `{"id":1}` || r.Status != 201 {
			t.Errorf("result %+v", r)
		}
		if r.Replayed {
			replays++
		}
	}
	if replays != 7 {
		t.Errorf("replays = %d", replays)
	}

	_, err := idempotency.Run(ctx, d, "lead-1-contact", map[string]string{"a": "other"}, fn)
	if p := problem.From(err); p.Status != 409 || p.Code != "idempotency_key_reused" {
		t.Fatalf("different body: %v", err)
	}
}

func TestFailedRunIsNotStored(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := testdb.New(t, "idemtest", idempotency.Migrate, idempotency.Migrations)
	_, err := idempotency.Run(ctx, d, "k", 1, func(tx pgx.Tx) (int, any, error) {
		return 0, nil, problem.Invalid("name", "is required")
	})
	if problem.From(err).Status != 422 {
		t.Fatal(err)
	}
	res, err := idempotency.Run(ctx, d, "k", 1, func(tx pgx.Tx) (int, any, error) { return 201, "ok", nil })
	if err != nil || res.Replayed || string(res.Body) != `"ok"` {
		t.Fatalf("retry after failure: %+v %v", res, err)
	}
}

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
