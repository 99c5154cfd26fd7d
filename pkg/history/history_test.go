package history_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"

	"github.com/opencrm/crm/pkg/auth"
	"github.com/opencrm/crm/pkg/contract/historyapi"
	"github.com/opencrm/crm/pkg/db"
	"github.com/opencrm/crm/pkg/fault"
	"github.com/opencrm/crm/pkg/history"
	"github.com/opencrm/crm/pkg/problem"
	"github.com/opencrm/crm/pkg/testdb"
)

// migrate is a context's migrations in miniature: history first, then a
// table that tracks itself.
func migrate(ctx context.Context, d *db.DB) error {
	if err := history.Migrate(ctx, d); err != nil {
		return err
	}
	_, err := d.Exec(ctx, `CREATE TABLE things (id bigserial PRIMARY KEY, name text NOT NULL, status text, owner bigint,
		custom_fields jsonb NOT NULL DEFAULT '{}', search_text text, created_at timestamptz NOT NULL DEFAULT now(),
		updated_at timestamptz NOT NULL DEFAULT now());
		SELECT history_track('things', 'thing', ARRAY['search_text'])`)
	return err
}

type change struct{ Field, From, To string }

// changes renders an entry's changes as JSON text, for cmp.
func changes(e historyapi.HistoryEntry) []change {
	out := []change{}
	for _, c := range e.Changes {
		out = append(out, change{c.Field, string(c.From), string(c.To)})
	}
	return out
}

// TestTriggersRecordEveryChange: a create lists what it set, an update
// what it changed (custom fields one by one), a delete what it cleared; an
// update that changes nothing tracked, and a rolled-back change, leave no
// entry; who and how come from the request's context.
func TestTriggersRecordEveryChange(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := testdb.New(t, "hist", migrate, history.Migrations)
	user := int64(7)
	claims := &auth.Claims{RegisteredClaims: jwt.RegisteredClaims{Subject: "7"}, Role: auth.RoleUser, Name: "Ann Lee"}
	req := problem.WithRequestID(auth.WithClaims(ctx, claims), "req-1")

	var id int64
	if err := d.QueryRow(req, `INSERT INTO things (name, status, custom_fields, search_text) VALUES ('A', 'new', '{"tier": "gold"}', 'a')
		RETURNING id`).Scan(&id); err != nil {
		t.Fatal(err)
	}
	exec := func(ctx context.Context, sql string) {
		t.Helper()
		if _, err := d.Exec(ctx, sql, id); err != nil {
			t.Fatal(err)
		}
	}
	exec(req, `UPDATE things SET updated_at = now(), search_text = 'b' WHERE id = $1`) // nothing tracked
	token := &auth.Claims{RegisteredClaims: jwt.RegisteredClaims{Subject: "12"}, Role: auth.RoleUser, Name: "ERP sync", Scopes: []string{"contacts:write"}}
	batch := history.WithVia(problem.WithRequestID(auth.WithClaims(ctx, token), "req-2"), historyapi.ViaBatch)
	exec(batch, `UPDATE things SET status = 'won', owner = 3, custom_fields = '{"tier": "silver", "size": 4}' WHERE id = $1`)
	err := d.InTx(req, func(tx pgx.Tx) error {
		if _, err := tx.Exec(req, `UPDATE things SET name = 'rolled back' WHERE id = $1`, id); err != nil {
			return err
		}
		return errors.New("abort")
	})
	if err == nil {
		t.Fatal("the transaction committed")
	}
	exec(ctx, `DELETE FROM things WHERE id = $1`) // the system's: no request

	entries, more, err := history.List(ctx, d, "thing", id, history.Query{PerPage: 10})
	if err != nil {
		t.Fatal(err)
	}
	if more || len(entries) != 3 {
		t.Fatalf("%d entries (more %v), want 3: %+v", len(entries), more, entries)
	}
	tokenUser := int64(12)
	want := []struct {
		action, via, request string
		actor                historyapi.HistoryActor
		changes              []change
	}{
		{historyapi.Deleted, historyapi.ViaSystem, "", historyapi.HistoryActor{Type: historyapi.ActorSystem}, []change{
			{"custom_fields.size", "4", "null"}, {"custom_fields.tier", `"silver"`, "null"},
			{"name", `"A"`, "null"}, {"owner", "3", "null"}, {"status", `"won"`, "null"}}},
		{historyapi.Updated, historyapi.ViaBatch, "req-2", historyapi.HistoryActor{Type: historyapi.ActorToken, ID: &tokenUser, Name: "ERP sync"}, []change{
			{"custom_fields.size", "null", "4"}, {"custom_fields.tier", `"gold"`, `"silver"`},
			{"owner", "null", "3"}, {"status", `"new"`, `"won"`}}},
		{historyapi.Created, historyapi.ViaAPI, "req-1", historyapi.HistoryActor{Type: historyapi.ActorUser, ID: &user, Name: "Ann Lee"}, []change{
			{"custom_fields.tier", "null", `"gold"`}, {"name", "null", `"A"`}, {"status", "null", `"new"`}}},
	}
	for i, w := range want {
		e := entries[i]
		if e.Action != w.action || e.Via != w.via || e.RequestID != w.request {
			t.Errorf("entry %d: %s via %s (request %q), want %s via %s (request %q)", i, e.Action, e.Via, e.RequestID, w.action, w.via, w.request)
		}
		if diff := cmp.Diff(w.actor, e.Actor); diff != "" {
			t.Errorf("entry %d: actor (-want +got):\n%s", i, diff)
		}
		if diff := cmp.Diff(w.changes, changes(e)); diff != "" {
			t.Errorf("entry %d: changes (-want +got):\n%s", i, diff)
		}
	}

	// The cursor walks the same entries, newest first.
	first, more, err := history.List(ctx, d, "thing", id, history.Query{PerPage: 2})
	if err != nil || !more || len(first) != 2 {
		t.Fatalf("first page: %d entries, more %v, %v", len(first), more, err)
	}
	rest, more, err := history.List(ctx, d, "thing", id, history.Query{Before: &first[1].ID, PerPage: 2})
	if err != nil || more || len(rest) != 1 || rest[0].ID != entries[2].ID {
		t.Fatalf("second page: %+v, more %v, %v", rest, more, err)
	}
	if ok, err := history.Recorded(ctx, d, "thing", id); err != nil || !ok {
		t.Errorf("a deleted record's history: recorded %v, %v", ok, err)
	}
	if ok, err := history.Recorded(ctx, d, "thing", id+1000); err != nil || ok {
		t.Errorf("a record that never existed: recorded %v, %v", ok, err)
	}
}

// TestSettingsDoNotLeak: a connection that served a request carries no
// actor into the next piece of work that has none.
func TestSettingsDoNotLeak(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := testdb.New(t, "hist", migrate, history.Migrations)
	claims := &auth.Claims{RegisteredClaims: jwt.RegisteredClaims{Subject: "7"}, Role: auth.RoleUser}
	req := problem.WithRequestID(auth.WithClaims(ctx, claims), "req-9")
	conn, err := d.Acquire(req)
	if err != nil {
		t.Fatal(err)
	}
	var actor string
	if err := conn.QueryRow(req, `SELECT current_setting('crm.actor')`).Scan(&actor); err != nil {
		t.Fatal(err)
	}
	conn.Release()
	if !json.Valid([]byte(actor)) || actor == "" {
		t.Fatalf("in the request: crm.actor %q", actor)
	}
	for range 3 { // the pool hands the same idle connection back
		if err := d.QueryRow(ctx, `SELECT coalesce(current_setting('crm.actor', true), '')`).Scan(&actor); err != nil {
			t.Fatal(err)
		}
		if actor != "" {
			t.Errorf("after the request: crm.actor %q", actor)
		}
	}
}

// TestHistoryRouteRefusals: before and per_page out of range are 422s
// naming the parameter, checked before the record; a record the caller
// cannot read answers as its own GET would (here 404); a valid request
// answers a page.
func TestHistoryRouteRefusals(t *testing.T) {
	t.Parallel()
	d := testdb.New(t, "hist", migrate, history.Migrations)
	h := history.Handler(d, "thing", func(_ context.Context, id int64) error {
		if id != 1 {
			return fault.NotFound("thing")
		}
		return nil
	})
	mux := http.NewServeMux()
	mux.Handle("GET /things/{id}/history", h)
	invalid := func(field, msg string) string {
		return `{"type":"/docs/problems#validation_failed","title":"Unprocessable Entity","status":422,` +
			`"detail":"one or more fields are invalid","code":"validation_failed","errors":[{"field":"` + field + `","message":"` + msg + `"}]}`
	}
	const badBefore, badPerPage = "must be an entry id (the next_before of a page)", "must be an integer between 1 and 100"
	for _, tt := range []struct {
		path   string
		status int
		body   string
	}{
		{"/things/1/history", 200, `{"success":true,"data":[],"has_more":false,"next_before":null}`},
		{"/things/1/history?before=5&per_page=100", 200, `{"success":true,"data":[],"has_more":false,"next_before":null}`},
		{"/things/1/history?before=0", 422, invalid("before", badBefore)},
		{"/things/1/history?before=-3", 422, invalid("before", badBefore)},
		{"/things/1/history?before=abc", 422, invalid("before", badBefore)},
		{"/things/1/history?before=99999999999999999999", 422, invalid("before", badBefore)},
		{"/things/1/history?per_page=0", 422, invalid("per_page", badPerPage)},
		{"/things/1/history?per_page=101", 422, invalid("per_page", badPerPage)},
		{"/things/2/history?per_page=101", 422, invalid("per_page", badPerPage)},
		{"/things/2/history", 404, `{"type":"/docs/problems#not_found","title":"Not Found","status":404,"detail":"thing not found","code":"not_found"}`},
	} {
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, tt.path, nil))
		if rec.Code != tt.status {
			t.Errorf("%s: status %d, want %d: %s", tt.path, rec.Code, tt.status, rec.Body)
		}
		if diff := cmp.Diff(tt.body, strings.TrimSpace(rec.Body.String())); diff != "" {
			t.Errorf("%s: body (-want +got):\n%s", tt.path, diff)
		}
	}
}

// TestPruneKeepsWhatIsWithinRetention: entries older than the retention
// go, newer ones stay; no retention keeps everything.
func TestPruneKeepsWhatIsWithinRetention(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := testdb.New(t, "hist", migrate, history.Migrations)
	if _, err := d.Exec(ctx, `INSERT INTO things (name) SELECT 'T' || g FROM generate_series(1, 3) g`); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Exec(ctx, `UPDATE history SET at = now() - interval '40 days' WHERE record_id <= 2`); err != nil {
		t.Fatal(err)
	}
	if n, err := history.Prune(ctx, d, 0); err != nil || n != 0 {
		t.Fatalf("no retention: pruned %d, %v", n, err)
	}
	if n, err := history.Prune(ctx, d, 30*24*time.Hour); err != nil || n != 2 {
		t.Fatalf("30 days: pruned %d, %v; want 2", n, err)
	}
	var left int
	if err := d.QueryRow(ctx, `SELECT count(*) FROM history`).Scan(&left); err != nil || left != 1 {
		t.Fatalf("%d entries left, %v; want 1", left, err)
	}
}

// TestSessionIfUntracked: a pool whose schema holds no history sets no
// session settings for a request.
func TestSessionIfUntracked(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := testdb.New(t, "hist", migrate, history.Migrations)
	off, err := db.Open(ctx, d.Config().ConnString(), "hist", 2, history.SessionIf(func() bool { return false }))
	if err != nil {
		t.Fatal(err)
	}
	defer off.Close()
	claims := &auth.Claims{RegisteredClaims: jwt.RegisteredClaims{Subject: "7"}, Role: auth.RoleUser}
	req := problem.WithRequestID(auth.WithClaims(ctx, claims), "req-10")
	var actor string
	if err := off.QueryRow(req, `SELECT coalesce(current_setting('crm.actor', true), '')`).Scan(&actor); err != nil {
		t.Fatal(err)
	}
	if actor != "" {
		t.Errorf("crm.actor %q, want none", actor)
	}
	if ok, err := history.Tracked(ctx, d); err != nil || !ok {
		t.Errorf("a migrated schema: tracked %v, %v", ok, err)
	}
}
