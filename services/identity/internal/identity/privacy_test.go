package identity_test

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/opencrm/crm/pkg/contract/historyapi"
	"github.com/opencrm/crm/pkg/contract/identityapi"
	"github.com/opencrm/crm/pkg/contract/privacyapi"
	"github.com/opencrm/crm/pkg/contract/privacyapi/privacyapitest"
	"github.com/opencrm/crm/pkg/db"
	"github.com/opencrm/crm/pkg/fault"
	"github.com/opencrm/crm/pkg/history"
	"github.com/opencrm/crm/services/identity/internal/identity"
	"github.com/opencrm/crm/services/identity/internal/store"
)

const privacySecret = "privacy-test-secret-0123456789"

var hashKey = []byte("privacy-hash-key-0123456789abcdef-test")

// world is a privacy runner on a fresh database with a fake per context.
type world struct {
	t     *testing.T
	db    *db.DB
	p     *identity.Privacy
	fakes map[string]*privacyapitest.Fake
	admin historyapi.HistoryActor
	ctx   context.Context
}

func newWorld(t *testing.T) *world {
	t.Helper()
	d := newDB(t)
	w := &world{t: t, db: d, fakes: map[string]*privacyapitest.Fake{}}
	parts := map[string]identity.PrivacyPart{}
	for _, c := range privacyapi.Contexts {
		f := privacyapitest.New(t, c, privacySecret)
		w.fakes[c], parts[c] = f, f.Client()
	}
	cfg := identity.DefaultPrivacyConfig()
	cfg.HashKey, cfg.RetryBase, cfg.RetryMax = hashKey, 0, 0
	p, err := identity.NewPrivacy(store.New(d), parts, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	w.p = p
	id := int64(42)
	w.admin = historyapi.HistoryActor{Type: historyapi.ActorUser, ID: &id, Name: "Ann Admin"}
	w.ctx = history.WithActor(context.Background(), w.admin)
	return w
}

// run works the due requests until none is left or n rounds passed.
func (w *world) run(n int) {
	w.t.Helper()
	for range n {
		claimed, err := w.p.RunOnce(context.Background())
		if err != nil {
			w.t.Fatal(err)
		}
		if claimed == 0 {
			return
		}
	}
}

func ids(v ...int64) []int64 { return v }

// script gives every context a part: contacts and leads find the person's
// records, deals the deals of the contacts.
func (w *world) script() {
	answer := func(c string, f privacyapi.Found, data string, r privacyapi.Receipt) {
		w.fakes[c].Answer(privacyapi.ExportPart{Found: f, Data: json.RawMessage(data)}, privacyapi.ErasePart{Found: f, Receipt: r})
	}
	answer(privacyapi.Contacts, privacyapi.Found{ContactIDs: ids(7, 3, 7)}, `{"contacts":[{"id":3},{"id":7}]}`,
		privacyapi.Receipt{Erased: map[string]int64{"contacts": 2, "notes": 1}, Redacted: map[string]int64{"history": 4}})
	answer(privacyapi.Leads, privacyapi.Found{LeadIDs: ids(11)}, `{"leads":[{"id":11}]}`,
		privacyapi.Receipt{Erased: map[string]int64{"leads": 1}})
	answer(privacyapi.Deals, privacyapi.Found{DealIDs: ids(21, 20)}, `{"deals":[{"id":20},{"id":21}]}`,
		privacyapi.Receipt{Redacted: map[string]int64{"deals": 2}})
	answer(privacyapi.Mail, privacyapi.Found{}, `{"emails":[]}`, privacyapi.Receipt{})
	answer(privacyapi.Intake, privacyapi.Found{}, `{"submissions":[{"id":1}]}`,
		privacyapi.Receipt{Erased: map[string]int64{"submissions": 1}})
	answer(privacyapi.Contracts, privacyapi.Found{}, `{"contracts":[{"id":5}]}`,
		privacyapi.Receipt{Erased: map[string]int64{"contracts": 1},
			Kept: []privacyapi.Kept{{Object: "contract", ID: 6, Reason: privacyapi.KeptExecutedContract}}})
	answer(privacyapi.Webhooks, privacyapi.Found{}, `{"events":[]}`,
		privacyapi.Receipt{Redacted: map[string]int64{"events": 3, "deliveries": 1}})
}

// wantSubjects are what each phase's contexts are asked about.
func wantSubjects(email string) map[string]privacyapi.Subject {
	one := privacyapi.Subject{Email: email}
	two := privacyapi.Subject{Email: email, ContactIDs: ids(3, 7), LeadIDs: ids(11)}
	three := privacyapi.Subject{Email: email, ContactIDs: ids(3, 7), LeadIDs: ids(11), DealIDs: ids(20, 21)}
	return map[string]privacyapi.Subject{privacyapi.Contacts: one, privacyapi.Leads: one,
		privacyapi.Deals: two, privacyapi.Mail: two, privacyapi.Intake: two,
		privacyapi.Contracts: three, privacyapi.Webhooks: three}
}

// TestErasureRunsThePhases: an erasure asks each phase's contexts once,
// in order, with the ids the earlier phases found (sorted, once each), as
// the requesting admin via erasure; it then stores every receipt, forgets
// the address, and records person.erased and privacy.erased with numbers
// and the keyed hash only.
func TestErasureRunsThePhases(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.script()
	const email = "Ann.Person@Example.com"
	e, err := w.p.RequestErasure(w.ctx, privacyapi.ErasureRequest{Email: "  " + email + " ", Reason: "GDPR Art. 17"})
	if err != nil {
		t.Fatal(err)
	}
	if e.Status != privacyapi.StatusPending || len(e.Receipts) != len(privacyapi.Contexts) || e.Receipts[0].Status != privacyapi.StatusPending {
		t.Fatalf("requested: %+v", e)
	}
	w.run(5)

	for c, want := range wantSubjects(email) {
		calls := w.fakes[c].Calls()
		if len(calls) != 1 {
			t.Fatalf("%s called %d times, want once: %+v", c, len(calls), calls)
		}
		got := calls[0]
		if diff := cmp.Diff(privacyapitest.Call{Op: privacyapitest.OpErase, ErasureID: e.ID, Subject: want, Actor: w.admin,
			Via: historyapi.ViaErasure, Status: 200}, got); diff != "" {
			t.Errorf("%s's call (-want +got):\n%s", c, diff)
		}
	}
	got, err := w.p.Erasure(context.Background(), e.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != privacyapi.StatusCompleted || got.CompletedAt == nil || got.Reason != "GDPR Art. 17" {
		t.Fatalf("erasure %+v", got)
	}
	var contexts []string
	for _, r := range got.Receipts {
		contexts = append(contexts, r.Context+":"+r.Status)
	}
	if diff := cmp.Diff([]string{"contacts:completed", "leads:completed", "deals:completed", "mail:completed",
		"intake:completed", "contracts:completed", "webhooks:completed"}, contexts); diff != "" {
		t.Errorf("receipts (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(privacyapi.Receipt{Context: "contracts", Status: "completed", Erased: map[string]int64{"contracts": 1},
		Redacted: map[string]int64{}, Kept: []privacyapi.Kept{{Object: "contract", ID: 6, Reason: privacyapi.KeptExecutedContract}}},
		got.Receipts[5]); diff != "" {
		t.Errorf("contracts' receipt (-want +got):\n%s", diff)
	}

	var stored *string
	if err := w.db.QueryRow(context.Background(), `SELECT email FROM privacy_erasures WHERE id = $1`, e.ID).Scan(&stored); err != nil || stored != nil {
		t.Errorf("stored address after completion = %v (%v), want NULL", stored, err)
	}
	hash := hex.EncodeToString(w.p.Hash(email))
	entries := auditOf(t, w.db, identityapi.AuditPersonErasureRequested, identityapi.AuditPersonErased)
	if len(entries) != 2 {
		t.Fatalf("audit entries %+v", entries)
	}
	for _, en := range entries {
		if strings.Contains(strings.ToLower(string(en.Details)), "ann.person") {
			t.Errorf("%s carries the address: %s", en.Action, en.Details)
		}
		if en.Target == nil || en.Target.ID != itoa(e.ID) || en.Actor.Name != "Ann Admin" {
			t.Errorf("%s: target %+v actor %+v", en.Action, en.Target, en.Actor)
		}
	}
	if diff := cmp.Diff(`{"email_hash": "`+hash+`"}`, string(entries[0].Details)); diff != "" {
		t.Errorf("requested details (-want +got):\n%s", diff)
	}
	var details store.ErasedDetails
	if err := json.Unmarshal(entries[1].Details, &details); err != nil {
		t.Fatal(err)
	}
	wantCounts := map[string]identity.ReceiptCounts{
		"contacts":  {Erased: map[string]int64{"contacts": 2, "notes": 1}, Redacted: map[string]int64{"history": 4}},
		"leads":     {Erased: map[string]int64{"leads": 1}, Redacted: map[string]int64{}},
		"deals":     {Erased: map[string]int64{}, Redacted: map[string]int64{"deals": 2}},
		"mail":      {Erased: map[string]int64{}, Redacted: map[string]int64{}},
		"intake":    {Erased: map[string]int64{"submissions": 1}, Redacted: map[string]int64{}},
		"contracts": {Erased: map[string]int64{"contracts": 1}, Redacted: map[string]int64{}, Kept: 1},
		"webhooks":  {Erased: map[string]int64{}, Redacted: map[string]int64{"events": 3, "deliveries": 1}},
	}
	if diff := cmp.Diff(store.ErasedDetails{Counts: wantCounts, EmailHash: hash}, details); diff != "" {
		t.Errorf("person.erased details (-want +got):\n%s", diff)
	}
	var evType, aggregate string
	var data []byte
	if err := w.db.QueryRow(context.Background(), `SELECT type, aggregate_id, payload FROM outbox WHERE type = $1`,
		identity.EventErased).Scan(&evType, &aggregate, &data); err != nil {
		t.Fatal(err)
	}
	var ev identity.ErasedEvent
	if err := json.Unmarshal(data, &ev); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(identity.ErasedEvent{ErasureID: e.ID, Counts: wantCounts}, ev); diff != "" || aggregate != itoa(e.ID) {
		t.Errorf("privacy.erased %s (-want +got):\n%s", aggregate, diff)
	}
	if strings.Contains(strings.ToLower(string(data)), "ann.person") {
		t.Errorf("privacy.erased carries the address: %s", data)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// auditOf are the log's entries of actions, oldest first.
func auditOf(t *testing.T, d *db.DB, actions ...string) []identityapi.AuditEntry {
	t.Helper()
	st := store.New(d)
	var out []identityapi.AuditEntry
	for _, a := range actions {
		es, err := st.AuditEntries(context.Background(), identity.AuditFilter{Action: a, PerPage: 100})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, es...)
	}
	return out
}

// TestErasureWaitsForADownContext: a context that is down holds its
// phase (the next phase's contexts are not asked) and is asked again
// after the backoff; the contexts that answered are not asked again, so
// each erases once; the erasure completes once the context is back.
func TestErasureWaitsForADownContext(t *testing.T) {
	t.Parallel()
	for _, down := range []string{privacyapi.Leads, privacyapi.Mail, privacyapi.Webhooks} {
		t.Run(down, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t)
			w.script()
			w.fakes[down].Down(true)
			e, err := w.p.RequestErasure(w.ctx, privacyapi.ErasureRequest{Email: "down@example.com", Reason: "asked"})
			if err != nil {
				t.Fatal(err)
			}
			for range 3 {
				w.run(1)
			}
			got, err := w.p.Erasure(context.Background(), e.ID)
			if err != nil {
				t.Fatal(err)
			}
			if got.Status != privacyapi.StatusRunning {
				t.Fatalf("status %s while %s is down", got.Status, down)
			}
			phase := phaseOf(down)
			for i, r := range got.Receipts {
				c := privacyapi.Contexts[i]
				wantDone := phaseOf(c) < phase || (phaseOf(c) == phase && c != down)
				if (r.Status == privacyapi.StatusCompleted) != wantDone {
					t.Errorf("%s's receipt is %s while %s is down", c, r.Status, down)
				}
				if called := len(w.fakes[c].Calls()) > 0; called != (phaseOf(c) <= phase) {
					t.Errorf("%s called = %v while %s (phase %d) is down", c, called, down, phase)
				}
			}
			var attempts int
			var lastError string
			if err := w.db.QueryRow(context.Background(), `SELECT attempts, last_error FROM privacy_erasures WHERE id = $1`,
				e.ID).Scan(&attempts, &lastError); err != nil || attempts != 3 || !strings.Contains(lastError, down) {
				t.Errorf("attempts %d, last error %q (%v)", attempts, lastError, err)
			}

			w.fakes[down].Down(false)
			w.run(5)
			got, err = w.p.Erasure(context.Background(), e.ID)
			if err != nil || got.Status != privacyapi.StatusCompleted {
				t.Fatalf("after %s came back: %+v, %v", down, got, err)
			}
			for _, c := range privacyapi.Contexts {
				if n := len(w.fakes[c].Answered(privacyapitest.OpErase)); n != 1 {
					t.Errorf("%s answered %d erasures, want 1", c, n)
				}
			}
			if n := len(w.fakes[down].Calls()); n != 4 {
				t.Errorf("%s asked %d times, want 4 (3 down, 1 up)", down, n)
			}
		})
	}
}

func phaseOf(c string) int {
	for i, p := range privacyapi.Phases {
		for _, x := range p {
			if x == c {
				return i
			}
		}
	}
	return -1
}

// TestBackoff: a context that fails is asked again after RetryBase
// doubled per failed attempt, at most RetryMax.
func TestBackoff(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	cfg := identity.DefaultPrivacyConfig()
	cfg.HashKey, cfg.RetryBase, cfg.RetryMax = hashKey, time.Hour, 3*time.Hour
	parts := map[string]identity.PrivacyPart{}
	for c, f := range w.fakes {
		parts[c] = f.Client()
	}
	p, err := identity.NewPrivacy(store.New(w.db), parts, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	w.fakes[privacyapi.Contacts].Down(true)
	e, err := p.RequestErasure(w.ctx, privacyapi.ErasureRequest{Email: "backoff@example.com", Reason: "asked"})
	if err != nil {
		t.Fatal(err)
	}
	var delays []time.Duration
	for range 4 {
		if _, err := p.RunOnce(context.Background()); err != nil {
			t.Fatal(err)
		}
		var secs float64
		if err := w.db.QueryRow(context.Background(), `SELECT extract(epoch FROM next_attempt_at - now())
			FROM privacy_erasures WHERE id = $1`, e.ID).Scan(&secs); err != nil {
			t.Fatal(err)
		}
		delays = append(delays, (time.Duration(secs)*time.Second+30*time.Minute)/time.Hour*time.Hour)
		// Due again now, as if the wait had passed.
		if _, err := w.db.Exec(context.Background(), `UPDATE privacy_erasures SET next_attempt_at = now() WHERE id = $1`, e.ID); err != nil {
			t.Fatal(err)
		}
	}
	if diff := cmp.Diff([]time.Duration{time.Hour, 2 * time.Hour, 3 * time.Hour, 3 * time.Hour}, delays); diff != "" {
		t.Errorf("delays (-want +got):\n%s", diff)
	}
}

// TestExportDocument: an export asks every context read-only, with the
// ids the earlier phases found, and its document holds each context's
// data by name; the address is kept only in the document.
func TestExportDocument(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	w.script()
	w.fakes[privacyapi.Intake].FailNext(1)
	x, err := w.p.RequestExport(w.ctx, privacyapi.ExportRequest{Email: "Ann.Person@Example.com"})
	if err != nil {
		t.Fatal(err)
	}
	if x.Status != privacyapi.StatusPending || x.Document != nil {
		t.Fatalf("requested %+v", x)
	}
	w.run(5)
	got, err := w.p.Export(context.Background(), x.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != privacyapi.StatusCompleted || got.Document == nil || got.CompletedAt == nil {
		t.Fatalf("export %+v", got)
	}
	want := map[string]string{"contacts": `{"contacts":[{"id":3},{"id":7}]}`, "leads": `{"leads":[{"id":11}]}`,
		"deals": `{"deals":[{"id":20},{"id":21}]}`, "mail": `{"emails":[]}`, "intake": `{"submissions":[{"id":1}]}`,
		"contracts": `{"contracts":[{"id":5}]}`, "webhooks": `{"events":[]}`}
	docs := map[string]string{}
	for c, raw := range got.Document.Contexts {
		var b bytes.Buffer
		if err := json.Compact(&b, raw); err != nil {
			t.Fatal(err)
		}
		docs[c] = b.String()
	}
	if diff := cmp.Diff(want, docs); diff != "" || got.Document.Email != "Ann.Person@Example.com" {
		t.Errorf("document %s (-want +got):\n%s", got.Document.Email, diff)
	}
	for c, s := range wantSubjects("Ann.Person@Example.com") {
		for _, call := range w.fakes[c].Calls() {
			if call.Op != privacyapitest.OpExport || !cmp.Equal(s, call.Subject) || call.Actor.Name != "Ann Admin" {
				t.Errorf("%s's call %+v, want an export of %+v", c, call, s)
			}
		}
		if n := len(w.fakes[c].Answered(privacyapitest.OpExport)); n != 1 {
			t.Errorf("%s answered %d exports, want 1", c, n)
		}
	}
	var stored *string
	var parts string
	if err := w.db.QueryRow(context.Background(), `SELECT email, parts::text FROM privacy_exports WHERE id = $1`,
		x.ID).Scan(&stored, &parts); err != nil || stored != nil || parts != "{}" {
		t.Errorf("after completion: email %v, parts %s (%v); want NULL and {}", stored, parts, err)
	}
	if es := auditOf(t, w.db, identityapi.AuditPersonExportRequested); len(es) != 1 || es[0].Target.ID != itoa(x.ID) {
		t.Errorf("export audit entries %+v", es)
	}
}

// TestErasureAndExports: an export is refused while an erasure of the
// person runs (whatever the address's case); the erasure deletes the
// person's exports, finished or overtaken; an export asked for after the
// erasure completed runs.
func TestErasureAndExports(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	done, err := w.p.RequestExport(w.ctx, privacyapi.ExportRequest{Email: "both@example.com"})
	if err != nil {
		t.Fatal(err)
	}
	w.run(5)
	other, err := w.p.RequestExport(w.ctx, privacyapi.ExportRequest{Email: "someone.else@example.com"})
	if err != nil {
		t.Fatal(err)
	}
	w.run(5)
	running, err := w.p.RequestExport(w.ctx, privacyapi.ExportRequest{Email: "both@example.com"})
	if err != nil {
		t.Fatal(err)
	}
	e, err := w.p.RequestErasure(w.ctx, privacyapi.ErasureRequest{Email: "BOTH@example.com", Reason: "asked"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.p.RequestExport(w.ctx, privacyapi.ExportRequest{Email: "Both@Example.com"}); !errors.Is(err, identity.ErrErasureRunning) {
		t.Fatalf("export during the erasure: %v, want %v", err, identity.ErrErasureRunning)
	}
	w.run(10)
	for _, id := range []int64{done.ID, running.ID} {
		if _, err := w.p.Export(context.Background(), id); fault.KindOf(err) != fault.KindNotFound {
			t.Errorf("export %d after the erasure: %v, want not found", id, err)
		}
	}
	if x, err := w.p.Export(context.Background(), other.ID); err != nil || x.Status != privacyapi.StatusCompleted {
		t.Errorf("another person's export: %+v, %v", x, err)
	}
	if got, err := w.p.Erasure(context.Background(), e.ID); err != nil || got.Status != privacyapi.StatusCompleted {
		t.Fatalf("erasure %+v, %v", got, err)
	}
	after, err := w.p.RequestExport(w.ctx, privacyapi.ExportRequest{Email: "both@example.com"})
	if err != nil {
		t.Fatal(err)
	}
	w.run(5)
	if x, err := w.p.Export(context.Background(), after.ID); err != nil || x.Status != privacyapi.StatusCompleted {
		t.Errorf("export after the erasure: %+v, %v", x, err)
	}
}

// TestOneErasurePerPerson: a second request for the address (in any
// case) answers the first erasure, completed or not; requests at once
// make one erasure, asked of each context once.
func TestOneErasurePerPerson(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	const n = 8
	got := make([]privacyapi.Erasure, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			email := "twice@example.com"
			if i%2 == 1 {
				email = "Twice@Example.COM"
			}
			got[i], errs[i] = w.p.RequestErasure(w.ctx, privacyapi.ErasureRequest{Email: email, Reason: "asked"})
		}()
	}
	close(start)
	wg.Wait()
	for i := range n {
		if errs[i] != nil || got[i].ID != got[0].ID {
			t.Fatalf("request %d: %+v, %v; want erasure %d", i, got[i], errs[i], got[0].ID)
		}
	}
	var rows int
	if err := w.db.QueryRow(context.Background(), `SELECT count(*) FROM privacy_erasures`).Scan(&rows); err != nil || rows != 1 {
		t.Fatalf("%d erasures stored (%v), want 1", rows, err)
	}
	if es := auditOf(t, w.db, identityapi.AuditPersonErasureRequested); len(es) != 1 {
		t.Errorf("%d erasure.requested entries, want 1", len(es))
	}

	// Two runners at once: each request is claimed by one.
	var runners sync.WaitGroup
	for range 2 {
		runners.Add(1)
		go func() {
			defer runners.Done()
			w.run(5)
		}()
	}
	runners.Wait()
	w.run(5)
	for _, c := range privacyapi.Contexts {
		if calls := w.fakes[c].Calls(); len(calls) != 1 {
			t.Errorf("%s called %d times, want once", c, len(calls))
		}
	}
	again, err := w.p.RequestErasure(w.ctx, privacyapi.ErasureRequest{Email: " twice@EXAMPLE.com", Reason: "asked"})
	if err != nil || again.ID != got[0].ID || again.Status != privacyapi.StatusCompleted {
		t.Errorf("after completion: %+v, %v; want the completed erasure %d", again, err, got[0].ID)
	}
}

// TestRequestValidation: the address is required and must be one; the
// reason bounded.
func TestRequestValidation(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	tests := []struct {
		name, email, reason string
		want                []fault.Field
	}{
		{"empty", "", "asked", []fault.Field{{Field: "email", Message: "is required"}}},
		{"blank", "   ", "asked", []fault.Field{{Field: "email", Message: "is required"}}},
		{"not an address", "ann", "asked", []fault.Field{{Field: "email", Message: "must be a valid email address"}}},
		{"display name", "Ann <ann@example.com>", "asked", []fault.Field{{Field: "email", Message: "must be a valid email address"}}},
		{"too long", strings.Repeat("a", 250) + "@example.com", "asked", []fault.Field{{Field: "email", Message: "must be at most 255 characters"}}},
		{"no reason", "ann@example.com", " ", []fault.Field{{Field: "reason", Message: "is required"}}},
		{"long reason", "ann@example.com", strings.Repeat("r", 256), []fault.Field{{Field: "reason", Message: "must be at most 255 characters"}}},
		{"nothing", "", "", []fault.Field{{Field: "email", Message: "is required"}, {Field: "reason", Message: "is required"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := w.p.RequestErasure(w.ctx, privacyapi.ErasureRequest{Email: tc.email, Reason: tc.reason})
			var f *fault.Error
			if !errors.As(err, &f) {
				t.Fatalf("erasure: %v, want a validation fault", err)
			}
			if diff := cmp.Diff(tc.want, f.Fields, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("erasure fields (-want +got):\n%s", diff)
			}
			if tc.reason != "asked" {
				return // an export has no reason
			}
			_, err = w.p.RequestExport(w.ctx, privacyapi.ExportRequest{Email: tc.email})
			if !errors.As(err, &f) {
				t.Fatalf("export: %v, want a validation fault", err)
			}
			if diff := cmp.Diff(tc.want, f.Fields, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("export fields (-want +got):\n%s", diff)
			}
		})
	}
}

// TestHash: the keyed hash ignores case and surrounding space, and
// depends on the key.
func TestHash(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	if a, b := w.p.Hash("Ann@Example.com "), w.p.Hash("ann@example.com"); string(a) != string(b) || len(a) != 32 {
		t.Errorf("hashes %x and %x, want one 32-byte hash", a, b)
	}
	cfg := identity.DefaultPrivacyConfig()
	cfg.HashKey = []byte(strings.Repeat("k", 32))
	parts := map[string]identity.PrivacyPart{}
	for c, f := range w.fakes {
		parts[c] = f.Client()
	}
	other, err := identity.NewPrivacy(store.New(w.db), parts, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	if string(other.Hash("ann@example.com")) == string(w.p.Hash("ann@example.com")) {
		t.Error("two keys hash an address alike")
	}
	cfg.HashKey = []byte("short")
	if _, err := identity.NewPrivacy(store.New(w.db), parts, cfg, slog.New(slog.NewTextHandler(io.Discard, nil))); err == nil {
		t.Error("a short key was taken")
	}
	delete(parts, privacyapi.Webhooks)
	cfg.HashKey = hashKey
	if _, err := identity.NewPrivacy(store.New(w.db), parts, cfg, slog.New(slog.NewTextHandler(io.Discard, nil))); err == nil {
		t.Error("a runner without the webhooks context was made")
	}
}

// cancelling is a context part whose call ends the runner's context, as
// a shutdown in the middle of a call does.
type cancelling struct {
	identity.PrivacyPart
	cancel context.CancelFunc
}

func (c cancelling) Erase(ctx context.Context, id int64, s privacyapi.Subject) (privacyapi.ErasePart, error) {
	c.cancel()
	return privacyapi.ErasePart{}, ctx.Err()
}

// TestShutdownLeavesTheRequestDue: a runner stopped in the middle of a
// phase leaves its request due at once (not after its lease), with what
// was answered kept; the next run completes it.
func TestShutdownLeavesTheRequestDue(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	ctx, cancel := context.WithCancel(context.Background())
	parts := map[string]identity.PrivacyPart{}
	for c, f := range w.fakes {
		parts[c] = f.Client()
	}
	parts[privacyapi.Mail] = cancelling{PrivacyPart: parts[privacyapi.Mail], cancel: cancel}
	cfg := identity.DefaultPrivacyConfig()
	cfg.HashKey = hashKey
	stopping, err := identity.NewPrivacy(store.New(w.db), parts, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	e, err := stopping.RequestErasure(w.ctx, privacyapi.ErasureRequest{Email: "stopping@example.com", Reason: "asked"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := stopping.RunOnce(ctx); err != nil {
		t.Fatal(err)
	}
	var due bool
	var phase int
	if err := w.db.QueryRow(context.Background(), `SELECT next_attempt_at <= now(), phase FROM privacy_erasures WHERE id = $1`,
		e.ID).Scan(&due, &phase); err != nil || !due || phase != 1 {
		t.Fatalf("after the shutdown: due %v, phase %d (%v); want due at once in phase 1", due, phase, err)
	}
	w.run(5)
	got, err := w.p.Erasure(context.Background(), e.ID)
	if err != nil || got.Status != privacyapi.StatusCompleted {
		t.Fatalf("after the restart: %+v, %v", got, err)
	}
	for _, c := range privacyapi.Contexts {
		// Deals and intake were asked beside mail: the shutdown may have
		// cut their answer off after they gave it (then asked again, they
		// answer their stored part).
		n := len(w.fakes[c].Answered(privacyapitest.OpErase))
		if phaseOf(c) == 1 && n >= 1 {
			continue
		}
		if n != 1 {
			t.Errorf("%s answered %d erasures, want 1", c, n)
		}
	}
}

// TestExportRetention: a completed export is deleted once older than its
// retention; one still running, or younger, stays.
func TestExportRetention(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	old, err := w.p.RequestExport(w.ctx, privacyapi.ExportRequest{Email: "old@example.com"})
	if err != nil {
		t.Fatal(err)
	}
	fresh, err := w.p.RequestExport(w.ctx, privacyapi.ExportRequest{Email: "fresh@example.com"})
	if err != nil {
		t.Fatal(err)
	}
	w.run(5)
	w.fakes[privacyapi.Contacts].Down(true)
	running, err := w.p.RequestExport(w.ctx, privacyapi.ExportRequest{Email: "running@example.com"})
	if err != nil {
		t.Fatal(err)
	}
	w.run(1)
	// The default retention is 7 days: age the old one and the running
	// one past it.
	if _, err := w.db.Exec(context.Background(), `UPDATE privacy_exports
		SET completed_at = coalesce(completed_at, now()) - interval '8 days', requested_at = requested_at - interval '8 days'
		WHERE id = ANY($1)`, []int64{old.ID, running.ID}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.db.Exec(context.Background(), `UPDATE privacy_exports SET completed_at = NULL WHERE id = $1`, running.ID); err != nil {
		t.Fatal(err)
	}
	n, err := w.p.PurgeExports(context.Background())
	if err != nil || n != 1 {
		t.Fatalf("purged %d (%v), want 1", n, err)
	}
	if _, err := w.p.Export(context.Background(), old.ID); !errors.Is(err, identity.ErrExportNotFound) {
		t.Errorf("the old export: %v, want not found", err)
	}
	for _, id := range []int64{fresh.ID, running.ID} {
		if _, err := w.p.Export(context.Background(), id); err != nil {
			t.Errorf("export %d: %v", id, err)
		}
	}
}
