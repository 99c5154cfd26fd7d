package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/opencrm/crm/pkg/auth"
	"github.com/opencrm/crm/pkg/contract/privacyapi"
	"github.com/opencrm/crm/pkg/idempotency"
	"github.com/opencrm/crm/services/webhooks/internal/api"
	"github.com/opencrm/crm/services/webhooks/internal/store"
)

const privacySecret = "test-internal-secret-0123456789"

// newPrivacyEnv is newEnv (no workers) serving the API as the service
// does, with the internal secret, on a schema holding the idempotency
// keys (store.Migrate's).
func newPrivacyEnv(t *testing.T) *env {
	t.Helper()
	e := newEnv(t, noWorkers())
	if err := idempotency.Migrate(context.Background(), e.db); err != nil {
		t.Fatal(err)
	}
	h, err := api.New(api.Deps{Store: e.store, Pinger: e.engine, Sealer: e.box, Verifier: e.issuer.Verifier(t),
		Grace: 24 * time.Hour, InternalSecret: privacySecret})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(e.ops.Handler(h))
	t.Cleanup(srv.Close)
	e.srv = srv
	return e
}

// internal posts body to an internal route with secret.
func (e *env) internal(path, secret string, body any) result {
	e.t.Helper()
	raw, err := json.Marshal(body)
	if err != nil {
		e.t.Fatal(err)
	}
	req, err := http.NewRequest(http.MethodPost, e.srv.URL+path, bytes.NewReader(raw))
	if err != nil {
		e.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if secret != "" {
		req.Header.Set(auth.InternalHeader, secret)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	return result{status: resp.StatusCode, header: resp.Header, body: b}
}

// wantJSON compares a JSON body with want as values; a problem's
// request_id (a new one per request) must be there and is left out.
func wantJSON(t *testing.T, r result, status int, want string) {
	t.Helper()
	var w, got map[string]any
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(r.body, &got); err != nil {
		t.Fatalf("body %q: %v", r.body, err)
	}
	if status >= 400 {
		if ct := r.header.Get("Content-Type"); ct != "application/problem+json" {
			t.Errorf("content type %q", ct)
		}
		if id, _ := got["request_id"].(string); id == "" {
			t.Errorf("body %s has no request_id", r.body)
		}
		delete(got, "request_id")
	}
	if r.status != status {
		t.Errorf("status %d, want %d: %s", r.status, status, r.body)
	}
	if diff := cmp.Diff(w, got); diff != "" {
		t.Errorf("body (-want +got):\n%s", diff)
	}
}

// TestPrivacyRoutesRefuse: the routes need the internal secret and an
// address.
func TestPrivacyRoutesRefuse(t *testing.T) {
	t.Parallel()
	e := newPrivacyEnv(t)
	unauthenticated := `{"type":"/docs/problems#unauthenticated","title":"Unauthorized","status":401,"detail":"internal route","code":"unauthenticated"}`
	noEmail := `{"type":"/docs/problems#validation_failed","title":"Unprocessable Entity","status":422,` +
		`"detail":"one or more fields are invalid","code":"validation_failed","errors":[{"field":"email","message":"is required"}]}`
	for _, tt := range []struct {
		name   string
		path   string
		secret string
		body   any
		status int
		want   string
	}{
		{"export without the secret", privacyapi.PathExport, "", privacyapi.Subject{Email: "ann@example.com"}, 401, unauthenticated},
		{"erase with a wrong secret", privacyapi.ErasurePath(1), "wrong-secret-0123456789", privacyapi.Subject{Email: "ann@example.com"}, 401, unauthenticated},
		{"export of an empty address", privacyapi.PathExport, privacySecret, map[string]any{"email": ""}, 422, noEmail},
		{"erase of a blank address", privacyapi.ErasurePath(1), privacySecret, map[string]any{"email": "  "}, 422, noEmail},
		{"erase with a bad lead id", privacyapi.ErasurePath(1), privacySecret, map[string]any{"email": "ann@example.com", "lead_ids": []int{0}}, 422,
			`{"type":"/docs/problems#validation_failed","title":"Unprocessable Entity","status":422,` +
				`"detail":"one or more fields are invalid","code":"validation_failed","errors":[{"field":"lead_ids","message":"must hold positive ids"}]}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			wantJSON(t, e.internal(tt.path, tt.secret, tt.body), tt.status, tt.want)
		})
	}
}

// ingestEvent stores one event of contacts' stream and returns its id.
func (e *env) ingestEvent(sourceID int64, typ, record, data string) string {
	e.t.Helper()
	if _, err := e.store.Ingest(context.Background(), store.NewEvent{Source: "contacts", SourceID: sourceID, Type: typ,
		RecordID: record, Data: json.RawMessage(data), OccurredAt: time.Now()}); err != nil {
		e.t.Fatal(err)
	}
	var seq int64
	if err := e.db.QueryRow(context.Background(), `SELECT seq FROM events WHERE source_id = $1`, sourceID).Scan(&seq); err != nil {
		e.t.Fatal(err)
	}
	return "evt_" + strconv.FormatInt(seq, 10)
}

// feedData is what GET /events serves of each event, by id.
func (e *env) feedData() map[string]any {
	e.t.Helper()
	r := e.do(http.MethodGet, "/events", e.admin, nil)
	if r.status != http.StatusOK {
		e.t.Fatalf("feed: %d %s", r.status, r.body)
	}
	out := map[string]any{}
	for _, ev := range decode[feed](e.t, r).Data {
		var v any
		if err := json.Unmarshal(ev.Data, &v); err != nil {
			e.t.Fatal(err)
		}
		out[ev.ID] = v
	}
	return out
}

func jsonValue(t *testing.T, s string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// TestPrivacyEraseRoute: the export lists the person's events; an erasure
// redacts them, and the feed serves them redacted. It runs once per id:
// its repeat answers the first receipt and changes nothing (an event
// quoting the person's address stored since stays as it is); a new id
// redacts what is there now. An event about their contact stored after
// the erasure is stored redacted.
func TestPrivacyEraseRoute(t *testing.T) {
	t.Parallel()
	e := newPrivacyEnv(t)
	contact := e.ingestEvent(1, "contact.created", "5", `{"id":5,"email":"ann@example.com","first_name":"Ann","created_at":"2026-03-01T10:00:00Z"}`)
	other := e.ingestEvent(2, "contact.created", "6", `{"id":6,"email":"bob@example.com","first_name":"Bob"}`)
	ann := privacyapi.Subject{Email: "ann@example.com", ContactIDs: []int64{5}}

	r := e.internal(privacyapi.PathExport, privacySecret, ann)
	var exported struct {
		Data struct {
			Data struct {
				Events []struct {
					ID      string          `json:"id"`
					Payload json.RawMessage `json:"payload"`
				} `json:"events"`
			} `json:"data"`
		} `json:"data"`
	}
	if err := json.Unmarshal(r.body, &exported); err != nil || r.status != http.StatusOK {
		t.Fatalf("export: %d %s", r.status, r.body)
	}
	if evs := exported.Data.Data.Events; len(evs) != 1 || evs[0].ID != contact ||
		!cmp.Equal(jsonValue(t, string(evs[0].Payload)), e.feedData()[contact]) {
		t.Errorf("export lists %s", r.body)
	}

	receipt := func(events int) string {
		return `{"data":{"receipt":{"context":"webhooks","status":"completed","erased":{},` +
			`"redacted":{"events":` + strconv.Itoa(events) + `,"deliveries":0},"kept":[]}}}`
	}
	wantJSON(t, e.internal(privacyapi.ErasurePath(4), privacySecret, ann), http.StatusOK, receipt(1))
	redacted := jsonValue(t, `{"id":5,"email":"[erased]","first_name":"[erased]","created_at":"2026-03-01T10:00:00Z"}`)
	// Stored after the erasure: an event about the erased contact is
	// stored redacted; one quoting the address is the next erasure's.
	onItsWay := e.ingestEvent(3, "contact.updated", "5", `{"id":5,"email":"ann@example.com"}`)
	later := e.ingestEvent(4, "deal.updated", "100", `{"id":100,"title":"Retrofit for ann@example.com"}`)
	want := map[string]any{
		contact:  redacted,
		other:    jsonValue(t, `{"id":6,"email":"bob@example.com","first_name":"Bob"}`),
		onItsWay: jsonValue(t, `{"id":5,"email":"[erased]"}`),
		later:    jsonValue(t, `{"id":100,"title":"Retrofit for ann@example.com"}`),
	}
	if diff := cmp.Diff(want, e.feedData()); diff != "" {
		t.Errorf("feed after the erasure (-want +got):\n%s", diff)
	}

	wantJSON(t, e.internal(privacyapi.ErasurePath(4), privacySecret, ann), http.StatusOK, receipt(1))
	if diff := cmp.Diff(want, e.feedData()); diff != "" {
		t.Errorf("feed after the repeat (-want +got):\n%s", diff)
	}

	wantJSON(t, e.internal(privacyapi.ErasurePath(5), privacySecret, ann), http.StatusOK, receipt(1))
	want[later] = jsonValue(t, `{"id":100,"title":"[erased]"}`)
	if diff := cmp.Diff(want, e.feedData()); diff != "" {
		t.Errorf("feed after a new erasure (-want +got):\n%s", diff)
	}
}
