package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/opencrm/crm/pkg/contract/identityapi"
	"github.com/opencrm/crm/pkg/problem/problemtest"
	"github.com/opencrm/crm/services/intake/internal/intake"
)

// wantProblem checks an RFC 9457 answer: status, media type, code and the
// fields named in errors (in order); none when no field is given.
func wantProblem(t *testing.T, r result, status int, code string, fields ...string) {
	t.Helper()
	b := problemtest.Want(t, r.status, r.header, r.body, status, code, fields...)
	if len(fields) == 0 && len(b.Errors) > 0 {
		t.Errorf("error fields = %v, want none", b.Errors)
	}
}

func TestSubmitCreatesLead(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	key := e.newKey(7, 0)

	r := e.post(key, validBody)

	if r.status != http.StatusCreated {
		t.Fatalf("status = %d, body %s", r.status, r.body)
	}
	want := map[string]any{"success": true, "data": map[string]any{"id": float64(1001)}, "message": "Lead created successfully"}
	if diff := cmp.Diff(want, r.json(t)); diff != "" {
		t.Errorf("body (-want +got):\n%s", diff)
	}
	wantLeads := []forwarded{{FirstName: "Ada", LastName: "Lovelace", Email: "ada@example.com",
		Company: "Analytical", Source: "public-api", Notes: "call me"}}
	if diff := cmp.Diff(wantLeads, e.leads.created()); diff != "" {
		t.Errorf("leads created (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"intake-1"}, e.leads.idemKeys()); diff != "" {
		t.Errorf("leads Idempotency-Keys (-want +got):\n%s", diff)
	}
	for h, v := range map[string]string{"RateLimit-Limit": "60", "RateLimit-Remaining": "59"} {
		if got := r.header.Get(h); got != v {
			t.Errorf("%s = %q, want %q", h, got, v)
		}
	}
	if r.header.Get("RateLimit-Reset") == "" {
		t.Error("RateLimit-Reset missing")
	}
	var sub intake.Submission
	eventually(t, "delivery recorded", func() bool {
		sub, _ = e.store.Get(context.Background(), 1)
		return sub.Status == intake.StatusDelivered
	})
	if sub.LeadID == nil || *sub.LeadID != 1001 || sub.APIKeyID != 7 || sub.DeliveredAt == nil {
		t.Errorf("submission = %+v, want delivered as lead 1001 for key 7", sub)
	}
}

func TestSubmitKeepsGivenSource(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	key := e.newKey(1, 0)
	r := e.post(key, `{"first_name":" Ada ","last_name":"L","email":"a@b.example","source":"landing-page","phone":"+1 555","job_title":"CTO"}`)
	if r.status != http.StatusCreated {
		t.Fatalf("status = %d, body %s", r.status, r.body)
	}
	want := []forwarded{{FirstName: "Ada", LastName: "L", Email: "a@b.example", Phone: "+1 555",
		JobTitle: "CTO", Source: "landing-page"}}
	if diff := cmp.Diff(want, e.leads.created()); diff != "" {
		t.Errorf("leads created (-want +got):\n%s", diff)
	}
}

func TestSubmitBadInput(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	key := e.newKey(1, 1000)
	revoked := e.newKey(2, 1000)
	e.identity.RevokeKey(revoked)
	long := func(n int) string { return strings.Repeat("x", n) }
	tests := []struct {
		name   string
		header map[string]string
		body   string
		status int
		code   string
		fields []string
	}{
		{name: "no key", header: map[string]string{"Content-Type": "application/json"},
			body: validBody, status: 401, code: "unauthenticated"},
		{name: "unknown key", header: map[string]string{"X-API-Key": "crm_live_nope", "Content-Type": "application/json"},
			body: validBody, status: 401, code: "unauthenticated"},
		{name: "revoked key", header: map[string]string{"X-API-Key": revoked, "Content-Type": "application/json"},
			body: validBody, status: 401, code: "unauthenticated"},
		{name: "bearer token instead of key", header: map[string]string{"Authorization": "Bearer " + e.issuer.Admin(t, 1), "Content-Type": "application/json"},
			body: validBody, status: 401, code: "unauthenticated"},
		{name: "bearer token beside key", header: map[string]string{"X-API-Key": key, "Authorization": "Bearer x.y.z", "Content-Type": "application/json"},
			body: validBody, status: 401, code: "unauthenticated"},
		{name: "missing email", body: `{"first_name":"A","last_name":"B"}`,
			status: 422, code: "validation_failed", fields: []string{"email"}},
		{name: "invalid email", body: `{"first_name":"A","last_name":"B","email":"not-an-email"}`,
			status: 422, code: "validation_failed", fields: []string{"email"}},
		{name: "email with display name", body: `{"first_name":"A","last_name":"B","email":"Ada <a@b.example>"}`,
			status: 422, code: "validation_failed", fields: []string{"email"}},
		{name: "missing names", body: `{"email":"a@b.example","first_name":"  "}`,
			status: 422, code: "validation_failed", fields: []string{"first_name", "last_name"}},
		{name: "over-long fields", body: `{"first_name":"` + long(101) + `","last_name":"` + long(101) + `","email":"a@b.example","phone":"` + long(256) +
			`","company":"` + long(256) + `","job_title":"` + long(256) + `","source":"` + long(256) + `"}`,
			status: 422, code: "validation_failed", fields: []string{"first_name", "last_name", "phone", "company", "job_title", "source"}},
		{name: "over-long email", body: `{"first_name":"A","last_name":"B","email":"` + long(250) + `@b.example"}`,
			status: 422, code: "validation_failed", fields: []string{"email"}},
		{name: "wrong field type", body: `{"first_name":5,"last_name":"B","email":"a@b.example"}`,
			status: 422, code: "validation_failed", fields: []string{"first_name"}},
		{name: "body over 64 KB", body: `{"first_name":"A","last_name":"B","email":"a@b.example","notes":"` + long(70_000) + `"}`,
			status: 413, code: "payload_too_large"},
		{name: "wrong content type", header: map[string]string{"X-API-Key": key, "Content-Type": "text/plain"},
			body: validBody, status: 415, code: "unsupported_media_type"},
		{name: "form encoded", header: map[string]string{"X-API-Key": key, "Content-Type": "application/x-www-form-urlencoded"},
			body: "first_name=A", status: 415, code: "unsupported_media_type"},
		{name: "malformed json", body: `{"first_name":"A",`, status: 400, code: "malformed_json"},
		{name: "not an object", body: `["a"]`, status: 400, code: "malformed_json"},
		{name: "empty body", body: ``, status: 400, code: "malformed_json"},
		{name: "NUL in a field", body: `{"first_name":"A\u0000","last_name":"B","email":"a@b.example","notes":"x\u0000"}`,
			status: 422, code: "validation_failed", fields: []string{"first_name", "notes"}},
		{name: "Idempotency-Key not ASCII", header: map[string]string{"X-API-Key": key, "Content-Type": "application/json", "Idempotency-Key": "k\xff"},
			body: validBody, status: 422, code: "validation_failed", fields: []string{"Idempotency-Key"}},
		{name: "Origin not UTF-8", header: map[string]string{"X-API-Key": key, "Content-Type": "application/json", "Origin": "https://\xffx.example"},
			body: validBody, status: 422, code: "validation_failed", fields: []string{"Origin"}},
		{name: "over-long Idempotency-Key", header: map[string]string{"X-API-Key": key, "Content-Type": "application/json", "Idempotency-Key": long(256)},
			body: validBody, status: 422, code: "validation_failed", fields: []string{"Idempotency-Key"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := tc.header
			if h == nil {
				h = map[string]string{"X-API-Key": key, "Content-Type": "application/json"}
			}
			r := e.do(http.MethodPost, "/public/leads", h, []byte(tc.body))
			wantProblem(t, r, tc.status, tc.code, tc.fields...)
			if got := r.header.Get("WWW-Authenticate"); tc.status == http.StatusUnauthorized && got != identityapi.KeyChallenge {
				t.Errorf("WWW-Authenticate = %q, want %q (as the gateway's)", got, identityapi.KeyChallenge)
			}
		})
	}
	if got := e.leads.created(); len(got) != 0 {
		t.Errorf("bad input created %d leads", len(got))
	}
	_, total, err := e.store.List(context.Background(), intake.Filter{Query: firstPage()})
	if err != nil {
		t.Fatal(err)
	}
	if total != 0 {
		t.Errorf("bad input stored %d submissions", total)
	}
}

func TestRevokedKeyRefusedAfterCache(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withCacheTTL(100*time.Millisecond))
	key := e.newKey(1, 0)
	if r := e.post(key, validBody); r.status != http.StatusCreated {
		t.Fatalf("status = %d, body %s", r.status, r.body)
	}
	e.identity.RevokeKey(key)
	var last result
	eventually(t, "revoked key refused", func() bool {
		last = e.post(key, validBody)
		return last.status == http.StatusUnauthorized
	})
	wantProblem(t, last, 401, "unauthenticated")
}

func TestKeyVerifyCached(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	key := e.newKey(1, 0)
	for range 3 {
		if r := e.post(key, validBody); r.status != http.StatusCreated {
			t.Fatalf("status = %d, body %s", r.status, r.body)
		}
	}
	calls := e.identity.Verifications()
	if calls != 1 {
		t.Errorf("identity verify calls = %d, want 1 (cached)", calls)
	}
}

func TestIdentityDown(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.identitySrv.Close()
	wantProblem(t, e.post("crm_live_x", validBody), 503, "upstream_unavailable")
}

func TestRateLimit(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	key := e.newKey(1, 2)
	other := e.newKey(2, 2)
	for i := range 2 {
		if r := e.post(key, validBody); r.status != http.StatusCreated {
			t.Fatalf("request %d: status = %d, body %s", i, r.status, r.body)
		}
	}
	r := e.post(key, validBody)
	wantProblem(t, r, 429, "rate_limited")
	if r.header.Get("Retry-After") == "" || r.header.Get("RateLimit-Reset") == "" {
		t.Errorf("429 headers = %v, want Retry-After and RateLimit-Reset", r.header)
	}
	if got := r.header.Get("RateLimit-Limit") + "/" + r.header.Get("RateLimit-Remaining"); got != "2/0" {
		t.Errorf("RateLimit-Limit/Remaining = %s, want 2/0", got)
	}
	// Another key has its own quota.
	if r := e.post(other, validBody); r.status != http.StatusCreated {
		t.Errorf("other key: status = %d, body %s", r.status, r.body)
	}
	if n := len(e.leads.created()); n != 3 {
		t.Errorf("leads created = %d, want 3", n)
	}
}

func TestLeadsDownDeliveredOnceByRetryJob(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	key := e.newKey(1, 0)
	e.leads.stop()

	r := e.post(key, validBody, "Idempotency-Key", "form-1")

	if r.status != http.StatusAccepted {
		t.Fatalf("status = %d, body %s", r.status, r.body)
	}
	want := map[string]any{"success": true, "data": map[string]any{"id": nil, "submission_id": float64(1)},
		"message": "Lead accepted; it will be created as soon as the leads service is available"}
	if diff := cmp.Diff(want, r.json(t)); diff != "" {
		t.Errorf("body (-want +got):\n%s", diff)
	}
	sub, err := e.store.Get(context.Background(), 1)
	if err != nil {
		t.Fatal(err)
	}
	// The admin view says why in our words, never with the Go error that
	// names leads' host and port.
	if sub.Status != intake.StatusPending || sub.LastError != "upstream_unavailable: leads is unavailable" {
		t.Errorf("submission = %+v, want pending with last_error %q", sub, "upstream_unavailable: leads is unavailable")
	}

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); e.svc.RunRetries(ctx) }()
	defer func() { cancel(); <-done }()
	// A few passes fail while leads is down.
	eventually(t, "retries while down", func() bool {
		s, _ := e.store.Get(context.Background(), 1)
		return s.Attempts >= 3
	})
	e.leads.restart()
	eventually(t, "delivery", func() bool {
		s, _ := e.store.Get(context.Background(), 1)
		return s.Status == intake.StatusDelivered
	})
	cancel()
	<-done

	if n := len(e.leads.created()); n != 1 {
		t.Errorf("leads created = %d, want exactly 1", n)
	}
	claimed, _, err := e.svc.RetryDue(context.Background())
	if err != nil || claimed != 0 {
		t.Errorf("RetryDue after delivery = %d, %v; want nothing left", claimed, err)
	}
	sub, _ = e.store.Get(context.Background(), 1)
	if sub.LeadID == nil || *sub.LeadID != 1001 || sub.DeliveredAt == nil || sub.NextAttemptAt != nil {
		t.Errorf("submission = %+v, want delivered as lead 1001", sub)
	}
	// The idempotent replay still gives the first answer.
	again := e.post(key, validBody, "Idempotency-Key", "form-1")
	if again.status != r.status || string(again.body) != string(r.body) {
		t.Errorf("replay = %d %s, want %d %s", again.status, again.body, r.status, r.body)
	}
}

func TestLostAnswerRetriedWithSameLead(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	key := e.newKey(1, 0)
	e.leads.mu.Lock()
	e.leads.loseNow = 1
	e.leads.mu.Unlock()

	r := e.post(key, validBody)
	if r.status != http.StatusAccepted {
		t.Fatalf("status = %d, body %s", r.status, r.body)
	}
	eventually(t, "delivery", func() bool {
		_, _, err := e.svc.RetryDue(context.Background())
		s, _ := e.store.Get(context.Background(), 1)
		return err == nil && s.Status == intake.StatusDelivered
	})
	if n := len(e.leads.created()); n != 1 {
		t.Errorf("leads created = %d, want 1", n)
	}
	if diff := cmp.Diff([]string{"intake-1"}, e.leads.idemKeys()); diff != "" {
		t.Errorf("keys (-want +got):\n%s", diff)
	}
}

func TestLeadsRefusesSubmission(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	key := e.newKey(1, 0)
	e.leads.mu.Lock()
	e.leads.refuse = true
	e.leads.mu.Unlock()
	wantProblem(t, e.post(key, validBody), 422, "validation_failed", "email")
	sub, err := e.store.Get(context.Background(), 1)
	if err != nil {
		t.Fatal(err)
	}
	if sub.Status != intake.StatusFailed {
		t.Errorf("status = %q, want failed", sub.Status)
	}
}

func TestIdempotency(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	key := e.newKey(1, 0)
	otherKey := e.newKey(2, 0)

	first := e.post(key, validBody, "Idempotency-Key", "abc")
	second := e.post(key, validBody, "Idempotency-Key", "abc")
	if first.status != http.StatusCreated || second.status != first.status || string(second.body) != string(first.body) {
		t.Fatalf("first %d %s, second %d %s: want the same 201", first.status, first.body, second.status, second.body)
	}
	if second.header.Get("Idempotent-Replayed") != "true" {
		t.Error("replay without Idempotent-Replayed: true")
	}
	if n := len(e.leads.created()); n != 1 {
		t.Errorf("leads created = %d, want 1", n)
	}

	// Same key, another body: 409.
	other := strings.Replace(validBody, "Ada", "Grace", 1)
	wantProblem(t, e.post(key, other, "Idempotency-Key", "abc"), 409, "idempotency_key_reused")

	// The same Idempotency-Key under another API key is another request.
	if r := e.post(otherKey, validBody, "Idempotency-Key", "abc"); r.status != http.StatusCreated || string(r.body) == string(first.body) {
		t.Errorf("other API key: %d %s, want a new 201", r.status, r.body)
	}
	if n := len(e.leads.created()); n != 2 {
		t.Errorf("leads created = %d, want 2", n)
	}
}

func TestIdempotencyInFlight(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	key := e.newKey(1, 0)
	block, entered := make(chan struct{}), make(chan struct{}, 1)
	e.leads.mu.Lock()
	e.leads.block, e.leads.entered = block, entered
	e.leads.mu.Unlock()

	firstc := make(chan result, 1)
	go func() { firstc <- e.post(key, validBody, "Idempotency-Key", "slow") }()
	<-entered // the first request is now inside leads

	wantProblem(t, e.post(key, validBody, "Idempotency-Key", "slow"), 409, "request_in_progress")

	e.leads.mu.Lock()
	e.leads.block = nil
	e.leads.mu.Unlock()
	close(block)
	first := <-firstc
	if first.status != http.StatusCreated {
		t.Fatalf("first: %d %s", first.status, first.body)
	}
	again := e.post(key, validBody, "Idempotency-Key", "slow")
	if again.status != http.StatusCreated || string(again.body) != string(first.body) {
		t.Errorf("after completion: %d %s, want %s", again.status, again.body, first.body)
	}
	if n := len(e.leads.created()); n != 1 {
		t.Errorf("leads created = %d, want 1", n)
	}
}

func TestHoneypot(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	key := e.newKey(1, 0)

	r := e.post(key, `{"first_name":"Bot","last_name":"Bot","email":"bot@spam.example","website":"http://spam.example"}`)

	if r.status != http.StatusCreated {
		t.Fatalf("status = %d, body %s", r.status, r.body)
	}
	body := r.json(t)
	data, _ := body["data"].(map[string]any)
	if _, isNumber := data["id"].(float64); !isNumber || body["success"] != true || body["message"] != "Lead created successfully" {
		t.Errorf("honeypot body = %s, want it shaped like a created lead", r.body)
	}
	if n := len(e.leads.created()); n != 0 {
		t.Errorf("leads created = %d, want 0", n)
	}
	if got := e.counter("intake_honeypot_submissions_total", nil); got != 1 {
		t.Errorf("honeypot counter = %v, want 1", got)
	}
	subs, total, err := e.store.List(context.Background(), intake.Filter{Query: firstPage(), Status: intake.StatusSpam})
	if err != nil || total != 1 || subs[0].Email != "bot@spam.example" {
		t.Errorf("spam submissions = %+v, %d, %v", subs, total, err)
	}
}

func TestCORS(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withCORS("https://global.example"))
	key := e.newKey(1, 0, "https://shop.example")

	t.Run("preflight without key", func(t *testing.T) {
		r := e.do(http.MethodOptions, "/public/leads", map[string]string{
			"Origin": "https://shop.example", "Access-Control-Request-Method": "POST",
			"Access-Control-Request-Headers": "content-type, x-api-key, idempotency-key",
		}, nil)
		if r.status != http.StatusNoContent {
			t.Fatalf("status = %d", r.status)
		}
		want := map[string]string{
			"Access-Control-Allow-Origin":  "https://shop.example",
			"Access-Control-Allow-Methods": "POST, OPTIONS",
			"Access-Control-Allow-Headers": "Content-Type, X-API-Key, Idempotency-Key, X-Request-Id",
		}
		for h, v := range want {
			if got := r.header.Get(h); got != v {
				t.Errorf("%s = %q, want %q", h, got, v)
			}
		}
	})
	for _, origin := range []string{"https://shop.example", "https://global.example"} {
		t.Run("allowed "+origin, func(t *testing.T) {
			r := e.post(key, validBody, "Origin", origin)
			if r.status != http.StatusCreated {
				t.Fatalf("status = %d, body %s", r.status, r.body)
			}
			if got := r.header.Get("Access-Control-Allow-Origin"); got != origin {
				t.Errorf("Access-Control-Allow-Origin = %q", got)
			}
			if !strings.Contains(r.header.Get("Access-Control-Expose-Headers"), "RateLimit-Remaining") {
				t.Errorf("Expose-Headers = %q", r.header.Get("Access-Control-Expose-Headers"))
			}
		})
	}
	t.Run("refused origin", func(t *testing.T) {
		before := len(e.leads.created())
		r := e.post(key, validBody, "Origin", "https://evil.example")
		wantProblem(t, r, 403, "forbidden")
		if got := r.header.Get("Access-Control-Allow-Origin"); got != "" {
			t.Errorf("Access-Control-Allow-Origin = %q, want none", got)
		}
		if len(e.leads.created()) != before {
			t.Error("a refused origin created a lead")
		}
	})
}

func TestAnyOriginWithoutLists(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	key := e.newKey(1, 0)
	r := e.post(key, validBody, "Origin", "https://anywhere.example")
	if r.status != http.StatusCreated || r.header.Get("Access-Control-Allow-Origin") != "https://anywhere.example" {
		t.Errorf("status %d, ACAO %q", r.status, r.header.Get("Access-Control-Allow-Origin"))
	}
}

func TestAdminSubmissions(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	k1, k2 := e.newKey(11, 0), e.newKey(12, 0)
	for _, k := range []string{k1, k1, k2} {
		if r := e.post(k, validBody); r.status != http.StatusCreated {
			t.Fatalf("seed: %d %s", r.status, r.body)
		}
	}
	e.post(k2, `{"first_name":"B","last_name":"B","email":"b@b.example","website":"x"}`)
	eventually(t, "deliveries recorded", func() bool {
		_, n, err := e.store.List(context.Background(), intake.Filter{Query: firstPage(), Status: intake.StatusDelivered})
		return err == nil && n == 3
	})
	admin := map[string]string{"Authorization": "Bearer " + e.issuer.Admin(t, 1)}

	tests := []struct {
		query     string
		wantIDs   []int64
		wantTotal int
	}{
		{query: "", wantIDs: []int64{1, 2, 3, 4}, wantTotal: 4},
		{query: "?status=delivered", wantIDs: []int64{1, 2, 3}, wantTotal: 3},
		{query: "?status=spam", wantIDs: []int64{4}, wantTotal: 1},
		{query: "?status=pending", wantIDs: []int64{}, wantTotal: 0},
		{query: "?api_key_id=12", wantIDs: []int64{3, 4}, wantTotal: 2},
		{query: "?api_key_id=11&per_page=1&page=2", wantIDs: []int64{2}, wantTotal: 2},
		{query: "?sort_by=id&sort_dir=desc&per_page=2", wantIDs: []int64{4, 3}, wantTotal: 4},
	}
	for _, tc := range tests {
		t.Run(tc.query, func(t *testing.T) {
			r := e.do(http.MethodGet, "/intake/submissions"+tc.query, admin, nil)
			if r.status != http.StatusOK {
				t.Fatalf("status = %d, body %s", r.status, r.body)
			}
			var page struct {
				Data []struct {
					ID     int64  `json:"id"`
					Status string `json:"status"`
				} `json:"data"`
				CurrentPage int `json:"current_page"`
				LastPage    int `json:"last_page"`
				PerPage     int `json:"per_page"`
				Total       int `json:"total"`
			}
			if err := json.Unmarshal(r.body, &page); err != nil {
				t.Fatal(err)
			}
			ids := []int64{}
			for _, d := range page.Data {
				ids = append(ids, d.ID)
			}
			if diff := cmp.Diff(tc.wantIDs, ids); diff != "" || page.Total != tc.wantTotal {
				t.Errorf("ids (-want +got):\n%s total %d want %d", diff, page.Total, tc.wantTotal)
			}
		})
	}

	one := e.do(http.MethodGet, "/intake/submissions/1", admin, nil)
	if one.status != http.StatusOK {
		t.Fatalf("get: %d %s", one.status, one.body)
	}
	var got struct {
		Data map[string]any `json:"data"`
	}
	_ = json.Unmarshal(one.body, &got)
	keys := []string{}
	for k := range got.Data {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	wantKeys := []string{"api_key_id", "attempts", "company", "created_at", "delivered_at", "email", "first_name", "id",
		"job_title", "last_error", "last_name", "lead_id", "next_attempt_at", "notes", "origin", "phone", "source", "status", "updated_at"}
	if diff := cmp.Diff(wantKeys, keys); diff != "" {
		t.Errorf("submission fields (-want +got):\n%s", diff)
	}
	if ts, _ := got.Data["created_at"].(string); len(ts) != len("2026-01-02T03:04:05.000000Z") || !strings.HasSuffix(ts, "Z") {
		t.Errorf("created_at = %q, want microsecond UTC", ts)
	}

	bad := []struct {
		name, path string
		header     map[string]string
		status     int
		code       string
		fields     []string
	}{
		{"no token", "/intake/submissions", nil, 401, "unauthenticated", nil},
		{"api key instead of token", "/intake/submissions", map[string]string{"X-API-Key": k1}, 401, "unauthenticated", nil},
		{"not admin", "/intake/submissions", map[string]string{"Authorization": "Bearer " + e.issuer.User(t, 2)}, 403, "forbidden", nil},
		{"bad status", "/intake/submissions?status=lost", admin, 422, "validation_failed", []string{"status"}},
		{"bad api_key_id", "/intake/submissions?api_key_id=x", admin, 422, "validation_failed", []string{"api_key_id"}},
		{"bad sort", "/intake/submissions?sort_by=secret", admin, 422, "validation_failed", []string{"sort_by"}},
		{"unknown submission", "/intake/submissions/999", admin, 404, "not_found", nil},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			wantProblem(t, e.do(http.MethodGet, tc.path, tc.header, nil), tc.status, tc.code, tc.fields...)
		})
	}
}

func TestRoutes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	wantProblem(t, e.do(http.MethodGet, "/public/leads", nil, nil), 405, "method_not_allowed")
	wantProblem(t, e.do(http.MethodGet, "/nowhere", nil, nil), 404, "not_found")
	if r := e.do(http.MethodGet, "/readyz", nil, nil); r.status != http.StatusOK {
		t.Errorf("readyz = %d", r.status)
	}
}

// TestConcurrentSubmissionsEachGetTheirOwnLead posts many submissions at
// once, so they share insert transactions and calls to leads: every answer
// must still carry the lead made from its own submission, exactly once.
func TestConcurrentSubmissionsEachGetTheirOwnLead(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	key := e.newKey(7, 100000)
	const n = 40
	ids := make([]int64, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			body := fmt.Sprintf(`{"first_name":"Ada","last_name":"L%d","email":"ada%d@example.com"}`, i, i)
			req, _ := http.NewRequest(http.MethodPost, e.srv.URL+"/public/leads", strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("X-API-Key", key)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			defer resp.Body.Close()
			var out struct {
				Data struct {
					ID int64 `json:"id"`
				} `json:"data"`
			}
			if resp.StatusCode != http.StatusCreated || json.NewDecoder(resp.Body).Decode(&out) != nil {
				t.Errorf("submission %d: status %d", i, resp.StatusCode)
				return
			}
			ids[i] = out.Data.ID
		}()
	}
	wg.Wait()
	created := e.leads.created()
	if len(created) != n {
		t.Fatalf("leads created = %d, want %d", len(created), n)
	}
	// The fake numbers leads 1001, 1002... in the order it created them.
	for i, id := range ids {
		if id < 1001 || id > 1000+n {
			t.Fatalf("submission %d answered lead id %d", i, id)
		}
		if got, want := created[id-1001].LastName, fmt.Sprintf("L%d", i); got != want {
			t.Errorf("submission %d answered lead %d, which was made from %q, want %q", i, id, got, want)
		}
	}
}
