package problem_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/opencrm/crm/pkg/fault"
	"github.com/opencrm/crm/pkg/problem"
)

func TestWrite(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		err        error
		wantStatus int
		wantBody   map[string]any
		wantHeader map[string]string
	}{
		{
			name:       "validation keeps field errors",
			err:        fmt.Errorf("create contact: %w", problem.Invalid("email", "must be a valid email address")),
			wantStatus: 422,
			wantBody: map[string]any{
				"type": "/docs/problems#validation_failed", "title": "Unprocessable Entity", "status": float64(422),
				"detail": "one or more fields are invalid", "code": "validation_failed", "request_id": "req-1",
				"errors": []any{map[string]any{"field": "email", "message": "must be a valid email address"}},
			},
		},
		{
			name:       "internal error never leaks its cause",
			err:        errors.New(`pq: relation "contacts" does not exist at character 15`),
			wantStatus: 500,
			wantBody: map[string]any{
				"type": "/docs/problems#internal", "title": "Internal Server Error", "status": float64(500),
				"detail": "an internal error occurred", "code": "internal", "request_id": "req-1",
			},
		},
		{
			name:       "a value the database cannot store is a 422 without its cause",
			err:        fmt.Errorf("insert contact: %w", sqlStateError("22021")),
			wantStatus: 422,
			wantBody: map[string]any{
				"type": "/docs/problems#validation_failed", "title": "Unprocessable Entity", "status": float64(422),
				"detail": "a value cannot be stored: it holds a NUL character or invalid text, or a date or number is out of range",
				"code":   "validation_failed", "request_id": "req-1",
			},
		},
		{
			name:       "other database errors stay internal",
			err:        fmt.Errorf("insert contact: %w", sqlStateError("23505")),
			wantStatus: 500,
			wantBody: map[string]any{
				"type": "/docs/problems#internal", "title": "Internal Server Error", "status": float64(500),
				"detail": "an internal error occurred", "code": "internal", "request_id": "req-1",
			},
		},
		{
			name:       "extra members are flattened into the body",
			err:        problem.Conflict("already_qualified", "lead is already qualified").With("contact_id", 7),
			wantStatus: 409,
			wantBody: map[string]any{
				"type": "/docs/problems#already_qualified", "title": "Conflict", "status": float64(409),
				"detail": "lead is already qualified", "code": "already_qualified", "request_id": "req-1",
				"contact_id": float64(7),
			},
		},
		{
			name:       "rate limit sets Retry-After",
			err:        problem.RateLimited(42),
			wantStatus: 429,
			wantBody: map[string]any{
				"type": "/docs/problems#rate_limited", "title": "Too Many Requests", "status": float64(429),
				"detail": "too many requests, retry later", "code": "rate_limited", "request_id": "req-1",
			},
			wantHeader: map[string]string{"Retry-After": "42"},
		},
		{
			name:       "unauthenticated sets WWW-Authenticate",
			err:        problem.Unauthenticated("missing bearer token"),
			wantStatus: 401,
			wantBody: map[string]any{
				"type": "/docs/problems#unauthenticated", "title": "Unauthorized", "status": float64(401),
				"detail": "missing bearer token", "code": "unauthenticated", "request_id": "req-1",
			},
			wantHeader: map[string]string{"Www-Authenticate": `Bearer realm="crm"`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := httptest.NewRequest(http.MethodGet, "/x", nil)
			r = r.WithContext(problem.WithRequestID(r.Context(), "req-1"))
			w := httptest.NewRecorder()
			problem.Write(w, r, tt.err)
			if w.Code != tt.wantStatus {
				t.Fatalf("status = %d, want %d", w.Code, tt.wantStatus)
			}
			if ct := w.Header().Get("Content-Type"); ct != problem.ContentType {
				t.Errorf("Content-Type = %q", ct)
			}
			var got map[string]any
			if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.wantBody, got); diff != "" {
				t.Errorf("body (-want +got):\n%s", diff)
			}
			for k, v := range tt.wantHeader {
				if got := w.Header().Get(k); got != v {
					t.Errorf("header %s = %q, want %q", k, got, v)
				}
			}
		})
	}
}

func TestErrorsIsMatchesCode(t *testing.T) {
	t.Parallel()
	err := fmt.Errorf("load: %w", problem.NotFound("contact"))
	if !errors.Is(err, problem.NotFound("")) {
		t.Error("wrapped not_found should match NotFound")
	}
	if errors.Is(err, problem.Conflict("", "")) {
		t.Error("not_found must not match conflict")
	}
}

// sqlStateError stands in for the driver's error, which carries SQLState.
type sqlStateError string

func (e sqlStateError) Error() string {
	return "ERROR: invalid byte sequence (SQLSTATE " + string(e) + ")"
}
func (e sqlStateError) SQLState() string { return string(e) }

func TestFromFault(t *testing.T) {
	t.Parallel()
	cases := []struct {
		err    error
		status int
		code   string
	}{
		{fault.NotFound("lead"), 404, "not_found"},
		{fmt.Errorf("wrapped: %w", fault.Conflict("lead_already_qualified", "qualified")), 409, "lead_already_qualified"},
		{fault.Invalid("email", "is not an email address"), 422, "validation_failed"},
		{fault.Forbidden("outside your scope"), 403, "forbidden"},
		{fault.Unauthenticated("wrong password"), 401, "unauthenticated"},
		{fault.Unavailablef(5, "contacts is unavailable"), 503, "upstream_unavailable"},
		{fault.Malformedf("invalid_csv", "not CSV"), 400, "invalid_csv"},
		{fault.New(fault.KindInternal, "boom", "secret detail"), 500, "internal"},
	}
	for _, c := range cases {
		p := problem.From(c.err)
		if p.Status != c.status || p.Code != c.code {
			t.Errorf("From(%v) = %d %s, want %d %s", c.err, p.Status, p.Code, c.status, c.code)
		}
	}
	if p := problem.From(fault.Invalid("email", "bad")); len(p.Errors) != 1 || p.Errors[0].Field != "email" {
		t.Errorf("fields not carried: %+v", p.Errors)
	}
	if !errors.Is(problem.NotFound("x"), fault.NotFound("")) || !errors.Is(fault.NotFound("x"), problem.NotFound("")) {
		t.Error("a problem and a fault of one code must match either way round")
	}
}

func TestRateLimitedFault(t *testing.T) {
	t.Parallel()
	p := problem.From(fault.RateLimited(3, "too many requests, retry later"))
	if p.Status != http.StatusTooManyRequests || p.Code != "rate_limited" || p.RetryAfter != 3 {
		t.Errorf("got %d %s retry %d, want 429 rate_limited retry 3", p.Status, p.Code, p.RetryAfter)
	}
}
