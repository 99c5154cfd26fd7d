package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/opencrm/crm/pkg/contract/mergeapi"
	"github.com/opencrm/crm/pkg/directory"
	"github.com/opencrm/crm/pkg/httpx"
	"github.com/opencrm/crm/services/contacts/internal/api"
	"github.com/opencrm/crm/services/contacts/internal/contacts"
)

// fakeMover is one context's POST /internal/merges/{id}: it records each
// move and answers {"data":{"<context>":n}}, or 503 while down.
type fakeMover struct {
	name string
	srv  *httptest.Server
	down atomic.Bool
	mu   sync.Mutex
	got  []mergeapi.Move
	via  []string
}

func newFakeMover(t *testing.T, name string) *fakeMover {
	f := &fakeMover{name: name}
	mux := http.NewServeMux()
	mux.HandleFunc(mergeapi.RouteMove, func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Internal-Token") != secret {
			http.Error(w, "no", http.StatusUnauthorized)
			return
		}
		if f.down.Load() {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		var m mergeapi.Move
		if err := json.NewDecoder(r.Body).Decode(&m); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		f.mu.Lock()
		f.got = append(f.got, m)
		f.via = append(f.via, r.Header.Get("X-Crm-Via"))
		f.mu.Unlock()
		httpx.JSON(w, http.StatusOK, map[string]any{"data": mergeapi.Moved{f.name: int64(len(m.Merged))}})
	})
	f.srv = httptest.NewServer(mux)
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeMover) moves() ([]mergeapi.Move, []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]mergeapi.Move(nil), f.got...), append([]string(nil), f.via...)
}

type mergeEnv struct {
	*env
	merger *contacts.Merger
	movers map[string]*fakeMover
}

// newMergeEnv is an env whose API serves merges, moving through fake
// deals, leads and mail; the runner retries after 20 ms.
func newMergeEnv(t *testing.T) *mergeEnv {
	t.Helper()
	var cfg api.Config
	e := newEnvWith(t, func(c *api.Config) { cfg = *c })
	movers := map[string]*fakeMover{}
	mv := map[string]contacts.Mover{}
	for _, name := range mergeapi.Movers {
		movers[name] = newFakeMover(t, name)
		mv[name] = mergeapi.New(name, movers[name].srv.URL, secret)
	}
	m, err := contacts.NewMerger(e.store, cfg.Service, contacts.MergeConfig{Movers: mv,
		RetryBase: 20 * time.Millisecond, RetryMax: 40 * time.Millisecond, Interval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Merger = m
	h, err := api.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	e.h = httpx.Chain(h, httpx.RequestID)
	return &mergeEnv{env: e, merger: m, movers: movers}
}

// runner runs the merge runner until the test ends.
func (e *mergeEnv) runner(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); e.merger.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
}

func (e *mergeEnv) contact(t *testing.T, body map[string]any) int64 {
	t.Helper()
	r := e.do(t, http.MethodPost, "/contacts", e.admin, body)
	wantStatus(t, r, http.StatusCreated)
	return id(t, r)
}

func (e *mergeEnv) company(t *testing.T, body map[string]any) int64 {
	t.Helper()
	r := e.do(t, http.MethodPost, "/companies", e.admin, body)
	wantStatus(t, r, http.StatusCreated)
	return id(t, r)
}

// problemBody is r's problem without its request id (which differs per
// request), for an exact comparison.
func problemBody(t *testing.T, r resp) map[string]any {
	t.Helper()
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/problem+json") {
		t.Fatalf("content type %q: %s", ct, r.Raw)
	}
	b := map[string]any{}
	for k, v := range r.Body {
		if k != "request_id" {
			b[k] = v
		}
	}
	return b
}

func invalidBody(fields ...[2]string) map[string]any {
	errs := make([]any, len(fields))
	for i, f := range fields {
		errs[i] = map[string]any{"field": f[0], "message": f[1]}
	}
	return map[string]any{"type": "/docs/problems#validation_failed", "title": "Unprocessable Entity", "status": float64(422),
		"detail": "one or more fields are invalid", "code": "validation_failed", "errors": errs}
}

func TestMergeContacts(t *testing.T) {
	t.Parallel()
	e := newMergeEnv(t)
	a := e.contact(t, map[string]any{"first_name": "Ada", "last_name": "Lovelace", "email": "ada@old.test", "tags": "vip,math",
		"phone": "+44 20 7946 0018"})
	b := e.contact(t, map[string]any{"first_name": "Ada", "last_name": "Lovelace", "email": "Ada@New.test", "tags": "math, poet",
		"job_title": "Analyst"})
	for _, c := range []int64{a, b} {
		wantStatus(t, e.do(t, http.MethodPost, fmt.Sprintf("/contacts/%d/notes", c), e.admin, map[string]any{"content": fmt.Sprint("note of ", c)}),
			http.StatusCreated)
	}
	wantStatus(t, e.do(t, http.MethodPost, fmt.Sprintf("/contacts/%d/tasks", b), e.admin, map[string]any{"title": "call"}), http.StatusCreated)

	r := e.do(t, http.MethodPost, fmt.Sprintf("/contacts/%d/merge", a), e.admin,
		map[string]any{"merge_ids": []int64{b}, "fields": map[string]any{"email": b}})
	wantStatus(t, r, http.StatusOK)
	mg := dataOf(t, r)
	mergeID := int64(mg["id"].(float64))
	if r.Header.Get("Location") != fmt.Sprintf("/api/merges/%d", mergeID) && r.Header.Get("Location") != fmt.Sprintf("/merges/%d", mergeID) {
		t.Errorf("Location %q", r.Header.Get("Location"))
	}
	wantMerge := map[string]any{"id": float64(mergeID), "object": "contact", "survivor": float64(a), "merged": []any{float64(b)},
		"fields": map[string]any{"email": float64(b)}, "status": "completed", "steps": []any{
			map[string]any{"context": "deals", "status": "done", "moved": map[string]any{"deals": float64(1)}, "attempts": float64(1)},
			map[string]any{"context": "leads", "status": "done", "moved": map[string]any{"leads": float64(1)}, "attempts": float64(1)},
			map[string]any{"context": "mail", "status": "done", "moved": map[string]any{"mail": float64(1)}, "attempts": float64(1)},
		}}
	ignoreTimes := func(m map[string]any) map[string]any {
		out := map[string]any{}
		for k, v := range m {
			if k != "created_at" && k != "completed_at" {
				out[k] = v
			}
		}
		return out
	}
	if diff := cmp.Diff(wantMerge, ignoreTimes(mg)); diff != "" {
		t.Errorf("merge (-want +got):\n%s", diff)
	}
	if mg["completed_at"] == nil {
		t.Error("completed merge without completed_at")
	}
	for name, f := range e.movers {
		moves, via := f.moves()
		// The survivor took b's address: its former one is the address
		// mail keeps as its alias (Emails), b's own is the survivor's.
		if diff := cmp.Diff([]mergeapi.Move{{Object: "contact", Into: a, Merged: []int64{b}, Emails: []string{"ada@old.test"}}}, moves); diff != "" {
			t.Errorf("%s moves (-want +got):\n%s", name, diff)
		}
		if diff := cmp.Diff([]string{"merge"}, via); diff != "" {
			t.Errorf("%s via (-want +got):\n%s", name, diff)
		}
	}

	got := dataOf(t, e.do(t, http.MethodGet, fmt.Sprintf("/contacts/%d", a), e.admin, nil))
	for k, want := range map[string]any{"email": "Ada@New.test", "tags": "vip,math,poet", "job_title": "Analyst",
		"phone": "+44 20 7946 0018"} {
		if got[k] != want {
			t.Errorf("survivor %s = %v, want %v", k, got[k], want)
		}
	}
	notes := e.do(t, http.MethodGet, fmt.Sprintf("/contacts/%d/notes", a), e.admin, nil)
	if n := len(notes.Body["data"].([]any)); n != 2 {
		t.Errorf("survivor has %d notes, want 2: %s", n, notes.Raw)
	}
	tasks := e.do(t, http.MethodGet, fmt.Sprintf("/contacts/%d/tasks", a), e.admin, nil)
	if n := len(tasks.Body["data"].([]any)); n != 1 {
		t.Errorf("survivor has %d tasks, want 1: %s", n, tasks.Raw)
	}

	merged := map[string]any{"type": "/docs/problems#merged", "title": "Not Found", "status": float64(404),
		"detail": fmt.Sprintf("contact was merged into %d", a), "code": "merged", "merged_into": float64(a)}
	for _, req := range []struct {
		method string
		body   any
		path   string
	}{{http.MethodGet, nil, ""}, {http.MethodPut, map[string]any{"first_name": "X", "last_name": "Y"}, ""}, {http.MethodDelete, nil, ""},
		{http.MethodGet, nil, "/history"}, {http.MethodGet, nil, "/notes"}, {http.MethodGet, nil, "/duplicates"},
		{http.MethodPost, map[string]any{"content": "late"}, "/notes"}} {
		r := e.do(t, req.method, fmt.Sprintf("/contacts/%d%s", b, req.path), e.admin, req.body)
		if diff := cmp.Diff(merged, problemBody(t, r)); diff != "" || r.Status != http.StatusNotFound {
			t.Errorf("%s merged contact%s: status %d (-want +got):\n%s", req.method, req.path, r.Status, diff)
		}
	}

	// History: the survivor's update and the merged contact's delete are
	// via merge.
	if n := e.count(t, `SELECT count(*) FROM history WHERE object = 'contact' AND record_id = ANY($1) AND via = 'merge'`,
		[]int64{a, b}); n != 2 {
		t.Errorf("%d history entries via merge, want 2", n)
	}
	if n := e.count(t, `SELECT count(*) FROM outbox WHERE type = 'contact.merged'
		AND payload::jsonb @> jsonb_build_object('survivor_id', $1::bigint, 'merged_ids', jsonb_build_array($2::bigint))`, a, b); n != 1 {
		t.Errorf("%d contact.merged events, want 1", n)
	}
	if n := e.count(t, `SELECT count(*) FROM outbox WHERE type = 'contact.deleted' AND aggregate_id = $1`, strconv.FormatInt(b, 10)); n != 1 {
		t.Errorf("%d contact.deleted events of the merged contact, want 1", n)
	}
	if n := e.count(t, `SELECT count(*) FROM outbox WHERE payload->>'action' = 'records.merged'`); n != 1 {
		t.Errorf("%d records.merged audit entries, want 1", n)
	}

	// A repeat answers the same merge; other field choices conflict.
	again := e.do(t, http.MethodPost, fmt.Sprintf("/contacts/%d/merge", a), e.admin,
		map[string]any{"merge_ids": []int64{b}, "fields": map[string]any{"email": b}})
	wantStatus(t, again, http.StatusOK)
	if got := int64(dataOf(t, again)["id"].(float64)); got != mergeID || again.Header.Get("Idempotent-Replayed") != "true" {
		t.Errorf("repeat answered merge %d (replayed %q), want %d", got, again.Header.Get("Idempotent-Replayed"), mergeID)
	}
	conflict := e.do(t, http.MethodPost, fmt.Sprintf("/contacts/%d/merge", a), e.admin,
		map[string]any{"merge_ids": []int64{b}, "fields": map[string]any{"email": a}})
	want := map[string]any{"type": "/docs/problems#merge_conflict", "title": "Conflict", "status": float64(409),
		"detail": fmt.Sprintf("merge %d merged these records with other field choices", mergeID), "code": "merge_conflict",
		"merge_id": float64(mergeID)}
	if diff := cmp.Diff(want, problemBody(t, conflict)); diff != "" || conflict.Status != http.StatusConflict {
		t.Errorf("conflicting repeat: status %d (-want +got):\n%s", conflict.Status, diff)
	}

	// GET /merges/{id}.
	if diff := cmp.Diff(wantMerge, ignoreTimes(dataOf(t, e.do(t, http.MethodGet, fmt.Sprintf("/merges/%d", mergeID), e.user, nil)))); diff != "" {
		t.Errorf("GET merge (-want +got):\n%s", diff)
	}
	r = e.do(t, http.MethodGet, "/merges/999999", e.user, nil)
	if diff := cmp.Diff(map[string]any{"type": "/docs/problems#not_found", "title": "Not Found", "status": float64(404),
		"detail": "merge not found", "code": "not_found"}, problemBody(t, r)); diff != "" {
		t.Errorf("unknown merge (-want +got):\n%s", diff)
	}
}

func TestMergeBadInput(t *testing.T) {
	t.Parallel()
	e := newMergeEnv(t)
	a := e.contact(t, map[string]any{"first_name": "A", "last_name": "One"})
	b := e.contact(t, map[string]any{"first_name": "B", "last_name": "Two"})
	co := e.company(t, map[string]any{"name": "Only Co"})
	eleven := make([]int64, 11)
	for i := range eleven {
		eleven[i] = a + 100 + int64(i)
	}
	for _, tt := range []struct {
		name string
		path string
		body any
		want map[string]any
	}{
		{"self-merge", fmt.Sprintf("/contacts/%d/merge", a), map[string]any{"merge_ids": []int64{b, a}},
			invalidBody([2]string{"merge_ids[1]", "is the record merged into"})},
		{"eleven ids", fmt.Sprintf("/contacts/%d/merge", a), map[string]any{"merge_ids": eleven},
			invalidBody([2]string{"merge_ids", "must hold at most 10 ids"})},
		{"no ids", fmt.Sprintf("/contacts/%d/merge", a), map[string]any{"merge_ids": []int64{}},
			invalidBody([2]string{"merge_ids", "is required"})},
		{"twice and not positive", fmt.Sprintf("/contacts/%d/merge", a), map[string]any{"merge_ids": []int64{b, b, 0}},
			invalidBody([2]string{"merge_ids[1]", "is listed twice"}, [2]string{"merge_ids[2]", "must be a positive integer"})},
		{"unknown id", fmt.Sprintf("/contacts/%d/merge", a), map[string]any{"merge_ids": []int64{b, a + 5000}},
			invalidBody([2]string{"merge_ids[1]", "does not exist"})},
		{"a company id to the contacts route", fmt.Sprintf("/contacts/%d/merge", a), map[string]any{"merge_ids": []int64{co + 9000}},
			invalidBody([2]string{"merge_ids[0]", "does not exist"})},
		{"a contact id to the companies route", fmt.Sprintf("/companies/%d/merge", co), map[string]any{"merge_ids": []int64{b + 7000}},
			invalidBody([2]string{"merge_ids[0]", "does not exist"})},
		{"bad fields", fmt.Sprintf("/contacts/%d/merge", a), map[string]any{"merge_ids": []int64{b},
			"fields": map[string]any{"id": b, "tags": a, "email": 77, "custom_fields.nope": b}},
			invalidBody([2]string{"fields.custom_fields.nope", "is not a custom field of contacts"},
				[2]string{"fields.email", "must be the id of a record of the merge"},
				[2]string{"fields.id", "is not a field a merge chooses"},
				[2]string{"fields.tags", "tags are united, not chosen"})},
		{"unknown survivor", "/contacts/987654/merge", map[string]any{"merge_ids": []int64{b}},
			map[string]any{"type": "/docs/problems#not_found", "title": "Not Found", "status": float64(404),
				"detail": "contact not found", "code": "not_found"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := e.do(t, http.MethodPost, tt.path, e.admin, tt.body)
			if diff := cmp.Diff(tt.want, problemBody(t, r)); diff != "" {
				t.Errorf("status %d (-want +got):\n%s", r.Status, diff)
			}
			if r.Status != int(tt.want["status"].(float64)) {
				t.Errorf("status %d, want %v", r.Status, tt.want["status"])
			}
		})
	}
	// Nothing was merged.
	if n := e.count(t, `SELECT count(*) FROM merges`); n != 0 {
		t.Errorf("%d merges after refusals", n)
	}
}

func TestMergeMoverDown(t *testing.T) {
	t.Parallel()
	e := newMergeEnv(t)
	a := e.contact(t, map[string]any{"first_name": "A", "last_name": "Down", "email": "a@down.test"})
	b := e.contact(t, map[string]any{"first_name": "B", "last_name": "Down", "email": "B@Down.test"})
	c := e.contact(t, map[string]any{"first_name": "C", "last_name": "Down"})
	e.movers["deals"].down.Store(true)
	r := e.do(t, http.MethodPost, fmt.Sprintf("/contacts/%d/merge", a), e.admin, map[string]any{"merge_ids": []int64{b}})
	wantStatus(t, r, http.StatusOK)
	mg := dataOf(t, r)
	mergeID := int64(mg["id"].(float64))
	steps := mg["steps"].([]any)
	if mg["status"] != "running" || steps[0].(map[string]any)["status"] != "pending" || steps[1].(map[string]any)["status"] != "done" {
		t.Fatalf("with deals down: %s", r.Raw)
	}
	if e.count(t, `SELECT count(*) FROM contacts WHERE id = $1`, b) != 0 {
		t.Error("the local step did not commit")
	}
	if n := e.count(t, `SELECT count(*) FROM merges WHERE id = $1 AND emails = '{b@down.test}'`, mergeID); n != 1 {
		t.Error("the running merge does not hold the merged contact's address for its retry")
	}
	// A record of the running merge cannot join another one.
	r = e.do(t, http.MethodPost, fmt.Sprintf("/contacts/%d/merge", c), e.admin, map[string]any{"merge_ids": []int64{a}})
	want := map[string]any{"type": "/docs/problems#merge_running", "title": "Conflict", "status": float64(409),
		"detail": fmt.Sprintf("merge %d is still moving records to one of these; retry when it completes", mergeID),
		"code":   "merge_running", "merge_id": float64(mergeID)}
	if diff := cmp.Diff(want, problemBody(t, r)); diff != "" || r.Status != http.StatusConflict {
		t.Errorf("record of a running merge: status %d (-want +got):\n%s", r.Status, diff)
	}
	// The runner retries while deals is down, then completes.
	e.runner(t)
	time.Sleep(100 * time.Millisecond)
	e.movers["deals"].down.Store(false)
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := dataOf(t, e.do(t, http.MethodGet, fmt.Sprintf("/merges/%d", mergeID), e.admin, nil))
		if got["status"] == "completed" {
			st := got["steps"].([]any)[0].(map[string]any)
			if st["attempts"].(float64) < 2 || st["error"] != nil {
				t.Errorf("deals step after retries: %v", st)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("merge still running: %v", got)
		}
		time.Sleep(20 * time.Millisecond)
	}
	// Each mover moved once, with the merged contact's address (the
	// survivor kept its own), stored with the merge for the runner's
	// retry and cleared once the merge completed.
	for name, f := range e.movers {
		moves, _ := f.moves()
		want := []mergeapi.Move{{Object: "contact", Into: a, Merged: []int64{b}, Emails: []string{"b@down.test"}}}
		if diff := cmp.Diff(want, moves); diff != "" {
			t.Errorf("%s moves (-want +got):\n%s", name, diff)
		}
	}
	if n := e.count(t, `SELECT count(*) FROM merges WHERE id = $1 AND emails = '{}'`, mergeID); n != 1 {
		t.Error("the completed merge still holds the merged contact's address")
	}
	// Completed: the survivor may be merged again.
	wantStatus(t, e.do(t, http.MethodPost, fmt.Sprintf("/contacts/%d/merge", c), e.admin, map[string]any{"merge_ids": []int64{a}}), http.StatusOK)
	r = e.do(t, http.MethodGet, fmt.Sprintf("/contacts/%d", b), e.admin, nil)
	if r.Status != http.StatusNotFound || r.Body["merged_into"] != float64(c) {
		t.Errorf("a contact merged into a merged one answers %d %s, want merged_into %d", r.Status, r.Raw, c)
	}
	// A merged id named again is refused, saying where it went.
	r = e.do(t, http.MethodPost, fmt.Sprintf("/contacts/%d/merge", c), e.admin, map[string]any{"merge_ids": []int64{b}})
	if diff := cmp.Diff(invalidBody([2]string{"merge_ids[0]", fmt.Sprintf("was merged into %d", c)}), problemBody(t, r)); diff != "" {
		t.Errorf("merging a merged id: status %d (-want +got):\n%s", r.Status, diff)
	}
}

func TestMergeCompanies(t *testing.T) {
	t.Parallel()
	e := newMergeEnv(t)
	keep := e.company(t, map[string]any{"name": "Acme Inc", "domain": "acme.test"})
	gone := e.company(t, map[string]any{"name": "ACME, Inc.", "domain": "ACME.test", "industry": "Anvils"})
	p := e.contact(t, map[string]any{"first_name": "P", "last_name": "Q", "company_id": gone})

	r := e.do(t, http.MethodGet, fmt.Sprintf("/companies/%d/duplicates", keep), e.admin, nil)
	wantStatus(t, r, http.StatusOK)
	list := r.Body["data"].([]any)
	if len(list) != 1 {
		t.Fatalf("company candidates: %s", r.Raw)
	}
	pair := list[0].(map[string]any)
	if diff := cmp.Diff([]any{float64(keep), float64(gone)}, pair["ids"]); diff != "" {
		t.Errorf("ids (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]any{"domain", "name"}, pair["reasons"]); diff != "" {
		t.Errorf("reasons (-want +got):\n%s", diff)
	}

	r = e.do(t, http.MethodGet, "/companies/duplicates", e.admin, nil)
	wantStatus(t, r, http.StatusOK)
	if list := r.Body["data"].([]any); len(list) != 1 || r.Body["next"] != nil {
		t.Errorf("company pairs: %s", r.Raw)
	} else if diff := cmp.Diff([]any{"domain", "name"}, list[0].(map[string]any)["reasons"]); diff != "" {
		t.Errorf("listed pair reasons (-want +got):\n%s", diff)
	}

	r = e.do(t, http.MethodPost, fmt.Sprintf("/companies/%d/merge", keep), e.admin, map[string]any{"merge_ids": []int64{gone}})
	wantStatus(t, r, http.StatusOK)
	if moves, _ := e.movers["deals"].moves(); len(moves) != 1 || moves[0].Object != "company" {
		t.Errorf("deals moves %v", moves)
	}
	got := dataOf(t, e.do(t, http.MethodGet, fmt.Sprintf("/contacts/%d", p), e.admin, nil))
	if got["company_id"] != float64(keep) || got["company_name"] != "Acme Inc" {
		t.Errorf("contact of the merged company: %v", got)
	}
	co := dataOf(t, e.do(t, http.MethodGet, fmt.Sprintf("/companies/%d", keep), e.admin, nil))
	if co["industry"] != "Anvils" || co["domain"] != "acme.test" {
		t.Errorf("survivor company: %v", co)
	}
	r = e.do(t, http.MethodGet, fmt.Sprintf("/companies/%d", gone), e.admin, nil)
	if r.Status != http.StatusNotFound || r.Body["code"] != "merged" || r.Body["merged_into"] != float64(keep) {
		t.Errorf("merged company: %d %s", r.Status, r.Raw)
	}
	// The contacts route does not merge companies: the merged company
	// is not a contact.
	r = e.do(t, http.MethodPost, fmt.Sprintf("/contacts/%d/merge", p), e.admin, map[string]any{"merge_ids": []int64{keep + 1000}})
	if r.Status != http.StatusUnprocessableEntity {
		t.Errorf("contacts route with a company id: %d", r.Status)
	}
}

func TestContactDuplicates(t *testing.T) {
	t.Parallel()
	e := newMergeEnv(t)
	co := e.company(t, map[string]any{"name": "Engines"})
	a := e.contact(t, map[string]any{"first_name": "Ada", "last_name": "Lovelace", "email": "ada@x.test", "phone": "(415) 555-0100",
		"company_id": co})
	b := e.contact(t, map[string]any{"first_name": "Ada", "last_name": "Lovelace", "email": "ADA@x.test"})
	c := e.contact(t, map[string]any{"first_name": "Other", "last_name": "Person", "mobile": "+1 415 555 0100"})
	d := e.contact(t, map[string]any{"first_name": "Ada", "last_name": "Lovelac", "company_id": co})
	_ = e.contact(t, map[string]any{"first_name": "Nobody", "last_name": "Else", "email": "no@x.test", "company_id": co})

	type pair struct {
		IDs     [2]int64
		Score   float64
		Reasons []string
	}
	pairsOf := func(r resp) []pair {
		t.Helper()
		var body struct {
			Data []pair  `json:"data"`
			Next *string `json:"next"`
		}
		if err := json.Unmarshal(r.Raw, &body); err != nil {
			t.Fatal(err)
		}
		return body.Data
	}
	r := e.do(t, http.MethodGet, fmt.Sprintf("/contacts/%d/duplicates", a), e.user, nil)
	wantStatus(t, r, http.StatusOK)
	want := []pair{
		{[2]int64{a, b}, 0.9, []string{"email"}},
		{[2]int64{a, c}, 0.8, []string{"phone"}},
		{[2]int64{a, d}, 0, []string{"name"}},
	}
	got := pairsOf(r)
	if len(got) == 3 {
		want[2].Score = got[2].Score // 0.6 × the names' similarity
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("candidates (-want +got):\n%s", diff)
	}
	if rec := r.Body["data"].([]any)[0].(map[string]any)["records"].([]any); rec[1].(map[string]any)["email"] != "ADA@x.test" {
		t.Errorf("records: %v", rec)
	}

	// The list, one pair per page.
	var all [][2]int64
	after := ""
	for range 10 {
		r := e.do(t, http.MethodGet, "/contacts/duplicates?per_page=1"+after, e.user, nil)
		wantStatus(t, r, http.StatusOK)
		for _, p := range pairsOf(r) {
			all = append(all, p.IDs)
		}
		next, _ := r.Body["next"].(string)
		if next == "" {
			break
		}
		after = "&after=" + next
	}
	// The list walks the e-mail and phone indexes: the name-only pair
	// (a, d) is a's candidate, not listed.
	if diff := cmp.Diff([][2]int64{{a, b}, {a, c}}, all); diff != "" {
		t.Errorf("pages (-want +got):\n%s", diff)
	}

	// Dismissed pairs are left out.
	r = e.do(t, http.MethodPost, "/contacts/duplicates/dismiss", e.user, map[string]any{"ids": []int64{c, a}})
	wantStatus(t, r, http.StatusOK)
	if diff := cmp.Diff(map[string]any{"success": true, "message": "Duplicate dismissed",
		"data": map[string]any{"ids": []any{float64(a), float64(c)}}}, r.Body); diff != "" {
		t.Errorf("dismiss (-want +got):\n%s", diff)
	}
	if got := pairsOf(e.do(t, http.MethodGet, "/contacts/duplicates", e.user, nil)); len(got) != 1 {
		t.Errorf("after dismissal: %v", got)
	}
	if got := pairsOf(e.do(t, http.MethodGet, fmt.Sprintf("/contacts/%d/duplicates", c), e.user, nil)); len(got) != 0 {
		t.Errorf("dismissed candidate still listed: %v", got)
	}

	for _, tt := range []struct {
		name, method, path string
		body               any
		want               map[string]any
	}{
		{"dismiss one id", http.MethodPost, "/contacts/duplicates/dismiss", map[string]any{"ids": []int64{a}},
			invalidBody([2]string{"ids", "must hold two ids"})},
		{"dismiss the same id", http.MethodPost, "/contacts/duplicates/dismiss", map[string]any{"ids": []int64{a, a}},
			invalidBody([2]string{"ids[1]", "must differ from ids[0]"})},
		{"dismiss unknown", http.MethodPost, "/contacts/duplicates/dismiss", map[string]any{"ids": []int64{a, a + 9999}},
			invalidBody([2]string{"ids[1]", "does not exist"})},
		{"bad cursor", http.MethodGet, "/contacts/duplicates?after=5,2&per_page=0", nil,
			invalidBody([2]string{"per_page", "must be an integer between 1 and 100"},
				[2]string{"after", "must be the next cursor of a previous page (two ids \"a,b\", a < b)"})},
		{"unknown contact", http.MethodGet, "/contacts/99999/duplicates", nil,
			map[string]any{"type": "/docs/problems#not_found", "title": "Not Found", "status": float64(404),
				"detail": "contact not found", "code": "not_found"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := e.do(t, tt.method, tt.path, e.user, tt.body)
			if diff := cmp.Diff(tt.want, problemBody(t, r)); diff != "" || r.Status != int(tt.want["status"].(float64)) {
				t.Errorf("status %d (-want +got):\n%s", r.Status, diff)
			}
		})
	}
}

func TestImportReportsDuplicateOf(t *testing.T) {
	t.Parallel()
	e := newMergeEnv(t)
	old := e.contact(t, map[string]any{"first_name": "Old", "last_name": "One", "email": "old@x.test"})
	r := e.upload(t, e.admin, "file", "c.csv", []byte("first_name,last_name,email,phone\nNew,Row,new@x.test,(415) 555-0100\nOld,Again,OLD@x.test,\n"))
	wantStatus(t, r, http.StatusOK)
	if diff := cmp.Diff([]any{map[string]any{"row": float64(3), "email": "OLD@x.test", "duplicate_of": float64(old)}},
		r.Body["duplicates"]); diff != "" {
		t.Errorf("duplicates (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]any{"Row 3: duplicate email OLD@x.test (already exists)"}, r.Body["errors"]); diff != "" {
		t.Errorf("errors (-want +got):\n%s", diff)
	}
	// The imported rows' numbers are normalised right after the import.
	deadline := time.Now().Add(10 * time.Second)
	for e.count(t, `SELECT count(*) FROM contacts WHERE phone_e164 = '+14155550100'`) != 1 {
		if time.Now().After(deadline) {
			t.Fatal("imported phone never normalised")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestListedPairMarksName: a listed pair (same e-mail) of one company with
// similar names carries name too, with its share of the score.
func TestListedPairMarksName(t *testing.T) {
	t.Parallel()
	e := newMergeEnv(t)
	co := e.company(t, map[string]any{"name": "Navy"})
	a := e.contact(t, map[string]any{"first_name": "Grace", "last_name": "Hopper", "email": "g@navy.test", "company_id": co})
	b := e.contact(t, map[string]any{"first_name": "Grace", "last_name": "Hoper", "email": "G@navy.test", "company_id": co})
	r := e.do(t, http.MethodGet, "/contacts/duplicates", e.user, nil)
	wantStatus(t, r, http.StatusOK)
	list := r.Body["data"].([]any)
	if len(list) != 1 {
		t.Fatalf("pairs: %s", r.Raw)
	}
	p := list[0].(map[string]any)
	if diff := cmp.Diff(map[string]any{"ids": []any{float64(a), float64(b)}, "reasons": []any{"email", "name"}},
		map[string]any{"ids": p["ids"], "reasons": p["reasons"]}); diff != "" {
		t.Errorf("pair (-want +got):\n%s", diff)
	}
	if s := p["score"].(float64); s <= 0.9 || s > 1 {
		t.Errorf("score %v, want above the e-mail's 0.9", s)
	}
}

// TestMergeOutsideEditScope: a merge naming a record the caller may not
// change answers 403 forbidden and merges nothing, whichever side the
// record is on: the survivor ({id}, the route's guard) or one of
// merge_ids (the merger's check), contacts and companies alike. Uma
// (team 10, edit scope team) may change contacts assigned to her team,
// not Otto's (team 20); Lone (edit scope own) may change the companies
// he created, not the admin's. Both records read as before, no merge,
// tombstone or merge event is stored.
func TestMergeOutsideEditScope(t *testing.T) {
	t.Parallel()
	e := newMergeEnv(t)
	later := time.Now().Add(time.Second)
	ten := e.teamTen
	for _, u := range []directory.User{
		{ID: userID, Name: "Uma User", Email: "uma@crm.test", Role: "user", TeamID: &ten, Active: true, UpdatedAt: later, EditScope: directory.ScopeTeam},
		{ID: loneID, Name: "Lone Wolf", Email: "lone@crm.test", Role: "user", Active: true, UpdatedAt: later, EditScope: directory.ScopeOwn},
	} {
		if err := directory.Upsert(context.Background(), e.db, u); err != nil {
			t.Fatal(err)
		}
	}
	lone := e.iss.Token(t, loneID, "user", nil)
	mine := e.contact(t, map[string]any{"first_name": "Ada", "last_name": "Lovelace", "email": "ada@x.test", "assigned_to": userID})
	teammates := e.contact(t, map[string]any{"first_name": "Ada", "last_name": "Lovelace", "email": "ada@x.test", "assigned_to": adminID})
	ottos := e.contact(t, map[string]any{"first_name": "Ada", "last_name": "Lovelace", "email": "ADA@x.test", "assigned_to": otherID})
	admins := e.company(t, map[string]any{"name": "Acme Inc", "domain": "acme.test"})
	r := e.do(t, http.MethodPost, "/companies", lone, map[string]any{"name": "ACME Inc.", "domain": "acme.test"})
	wantStatus(t, r, http.StatusCreated)
	lones := id(t, r)

	read := func(path string) map[string]any {
		t.Helper()
		r := e.do(t, http.MethodGet, path, e.admin, nil)
		wantStatus(t, r, http.StatusOK)
		return dataOf(t, r)
	}
	paths := []string{fmt.Sprintf("/contacts/%d", mine), fmt.Sprintf("/contacts/%d", teammates), fmt.Sprintf("/contacts/%d", ottos),
		fmt.Sprintf("/companies/%d", admins), fmt.Sprintf("/companies/%d", lones)}
	before := map[string]any{}
	for _, p := range paths {
		before[p] = read(p)
	}
	events := func() int {
		return e.count(t, `SELECT count(*) FROM outbox WHERE type = ANY($1)`, []string{contacts.ContactMerged, contacts.CompanyMerged})
	}
	eventsBefore := events()

	forbidden := map[string]any{"type": "/docs/problems#forbidden", "title": "Forbidden", "status": float64(403),
		"detail": "this record is outside your edit scope", "code": "forbidden"}
	for _, tt := range []struct {
		name  string
		token string
		path  string
		ids   []int64
	}{
		{"another team's contact merged into mine", e.user, fmt.Sprintf("/contacts/%d/merge", mine), []int64{ottos}},
		{"another team's contact among merge_ids", e.user, fmt.Sprintf("/contacts/%d/merge", mine), []int64{teammates, ottos}},
		{"mine merged into another team's contact", e.user, fmt.Sprintf("/contacts/%d/merge", ottos), []int64{mine}},
		{"someone else's company merged into mine", lone, fmt.Sprintf("/companies/%d/merge", lones), []int64{admins}},
		{"mine merged into someone else's company", lone, fmt.Sprintf("/companies/%d/merge", admins), []int64{lones}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := e.do(t, http.MethodPost, tt.path, tt.token, map[string]any{"merge_ids": tt.ids})
			if r.Status != http.StatusForbidden {
				t.Errorf("status %d, want 403: %s", r.Status, r.Raw)
			}
			if diff := cmp.Diff(forbidden, problemBody(t, r)); diff != "" {
				t.Errorf("body (-want +got):\n%s", diff)
			}
		})
	}

	after := map[string]any{}
	for _, p := range paths {
		after[p] = read(p)
	}
	if diff := cmp.Diff(before, after); diff != "" {
		t.Errorf("records after the refusals (-before +after):\n%s", diff)
	}
	if n := e.count(t, `SELECT count(*) FROM merges`); n != 0 {
		t.Errorf("%d merges after refusals", n)
	}
	if n := e.count(t, `SELECT count(*) FROM merged_records`); n != 0 {
		t.Errorf("%d merged records after refusals", n)
	}
	if n := events() - eventsBefore; n != 0 {
		t.Errorf("%d merge events after refusals", n)
	}
	for movers, mv := range e.movers {
		if got, _ := mv.moves(); len(got) != 0 {
			t.Errorf("%s moved %v after refusals", movers, got)
		}
	}

	// Within the scope the same user merges: a teammate's contact into
	// hers.
	r = e.do(t, http.MethodPost, fmt.Sprintf("/contacts/%d/merge", mine), e.user, map[string]any{"merge_ids": []int64{teammates}})
	wantStatus(t, r, http.StatusOK)
}
