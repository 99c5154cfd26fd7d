package api_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"

	"github.com/opencrm/crm/pkg/authtest"
	"github.com/opencrm/crm/pkg/contract/identityapi/identityapitest"
	"github.com/opencrm/crm/pkg/contract/leadsapi"
	"github.com/opencrm/crm/pkg/contract/privacyapi"
	"github.com/opencrm/crm/pkg/httpx"
	"github.com/opencrm/crm/pkg/testdb"
	"github.com/opencrm/crm/services/intake/internal/api"
	"github.com/opencrm/crm/services/intake/internal/apikey"
	"github.com/opencrm/crm/services/intake/internal/intake"
	"github.com/opencrm/crm/services/intake/internal/ratelimit"
	"github.com/opencrm/crm/services/intake/internal/store"
)

// newPrivacyEnv serves intake's routes with its privacy part, on a
// database migrated as the binary migrates it. Nothing here submits
// through the public route: the submissions are stored directly.
func newPrivacyEnv(t *testing.T) *env {
	t.Helper()
	d := testdb.New(t, store.Schema, store.Migrate, store.MigrationSets...)
	cfg := intake.DefaultConfig()
	st, err := store.New(d, store.Options{IdemTTL: cfg.IdemTTL, Orphaned: cfg.Lease})
	if err != nil {
		t.Fatal(err)
	}
	ops, err := httpx.NewOps()
	if err != nil {
		t.Fatal(err)
	}
	m, err := intake.NewMetrics(ops.Registry)
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	svc, err := intake.NewService(st, leadsapi.New("http://127.0.0.1:1", secret), cfg, m, log)
	if err != nil {
		t.Fatal(err)
	}
	_, identityClient := identityapitest.NewFake(secret).Start(t)
	keys, err := apikey.New(identityClient, apikey.MaxTTL)
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379"})
	t.Cleanup(func() { _ = rdb.Close() })
	lim, err := ratelimit.New(rdb, "test:intake:"+randHex(8)+":")
	if err != nil {
		t.Fatal(err)
	}
	part, err := store.NewPrivacy(d)
	if err != nil {
		t.Fatal(err)
	}
	issuer := authtest.New(t)
	h, err := api.New(api.Deps{
		Service: svc, Store: st, Keys: keys, Limiter: lim, Verifier: issuer.Verifier(t), Log: log,
		Privacy: api.Privacy{InternalSecret: secret, DB: d, Part: part},
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(ops.Handler(h))
	t.Cleanup(srv.Close)
	return &env{t: t, srv: srv, svc: svc, store: st, db: d, ops: ops, issuer: issuer}
}

// TestPrivacyRoutes: the internal privacy routes take the internal
// secret and a subject with an address; the export lists the subject's
// submissions as stored; an erasure deletes them once: the same erasure
// id again answers the same receipt and deletes nothing more, and
// another person's submission stays.
func TestPrivacyRoutes(t *testing.T) {
	t.Parallel()
	e := newPrivacyEnv(t)
	ctx := context.Background()
	accept := func(email string) intake.Submission {
		t.Helper()
		in := intake.Input{FirstName: "Ann", LastName: "Doe", Email: email}
		intake.Normalize(&in)
		acc, err := e.store.Accept(ctx, intake.NewSubmission{APIKeyID: 1, Status: intake.StatusPending, Input: in}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return acc.Submission
	}
	mine := accept("ann@example.com")
	theirs := accept("carl@example.com")
	internal := map[string]string{"Content-Type": "application/json", "X-Internal-Token": secret}
	send := func(path string, header map[string]string, body any) result {
		t.Helper()
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		return e.do(http.MethodPost, path, header, b)
	}
	subject := privacyapi.Subject{Email: "Ann@Example.com"}

	invalid := `{"type":"/docs/problems#validation_failed","title":"Unprocessable Entity","status":422,"detail":"one or more fields are invalid","code":"validation_failed","errors":[{"field":"email","message":"is required"}]}`
	for _, c := range []struct {
		name   string
		path   string
		header map[string]string
		body   any
		status int
		want   string
	}{
		{"empty email", privacyapi.PathExport, internal, map[string]any{"email": ""}, 422, invalid},
		{"blank email on an erasure", privacyapi.ErasurePath(2), internal, map[string]any{"email": "   "}, 422, invalid},
		{"no secret", privacyapi.ErasurePath(2), map[string]string{"Content-Type": "application/json"}, subject, 401,
			`{"type":"/docs/problems#unauthenticated","title":"Unauthorized","status":401,"detail":"internal route","code":"unauthenticated"}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := send(c.path, c.header, c.body)
			if r.status != c.status || r.header.Get("Content-Type") != "application/problem+json" {
				t.Fatalf("%d %s %s, want %d problem+json", r.status, r.header.Get("Content-Type"), r.body, c.status)
			}
			got := r.json(t)
			delete(got, "request_id")
			var want map[string]any
			if err := json.Unmarshal([]byte(c.want), &want); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("body (-want +got):\n%s", diff)
			}
		})
	}

	r := send(privacyapi.PathExport, internal, subject)
	if r.status != http.StatusOK {
		t.Fatalf("export: %d %s", r.status, r.body)
	}
	var export struct {
		Data struct {
			Data struct {
				Submissions []store.SubmissionExport `json:"submissions"`
			} `json:"data"`
		} `json:"data"`
	}
	if err := json.Unmarshal(r.body, &export); err != nil {
		t.Fatal(err)
	}
	if subs := export.Data.Data.Submissions; len(subs) != 1 || subs[0].ID != mine.ID || subs[0].Payload.Email != "ann@example.com" {
		t.Errorf("export = %s, want submission %d alone", r.body, mine.ID)
	}

	first := send(privacyapi.ErasurePath(2), internal, subject)
	if first.status != http.StatusOK {
		t.Fatalf("erasure: %d %s", first.status, first.body)
	}
	var got struct {
		Data privacyapi.ErasePart `json:"data"`
	}
	if err := json.Unmarshal(first.body, &got); err != nil {
		t.Fatal(err)
	}
	want := privacyapi.ErasePart{Receipt: privacyapi.Receipt{Context: privacyapi.Intake, Status: privacyapi.StatusCompleted,
		Erased: map[string]int64{"submissions": 1}, Redacted: map[string]int64{}, Kept: []privacyapi.Kept{}}}
	if diff := cmp.Diff(want, got.Data); diff != "" {
		t.Errorf("erasure (-want +got):\n%s", diff)
	}

	// A submission of the same address arriving after the erasure is not
	// the erasure's: the same erasure id again deletes nothing.
	later := accept("ann@example.com")
	again := send(privacyapi.ErasurePath(2), internal, subject)
	if again.status != http.StatusOK || string(again.body) != string(first.body) {
		t.Errorf("repeated erasure: %d %s, want %s", again.status, again.body, first.body)
	}
	for id, wantFound := range map[int64]bool{mine.ID: false, theirs.ID: true, later.ID: true} {
		_, err := e.store.Get(ctx, id)
		if found := err == nil; found != wantFound {
			t.Errorf("submission %d found = %v (%v), want %v", id, found, err, wantFound)
		}
	}
}
