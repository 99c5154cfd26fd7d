package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/shopspring/decimal"

	"github.com/opencrm/crm/pkg/contract/contactsapi"
	"github.com/opencrm/crm/pkg/contract/leadsapi"
	"github.com/opencrm/crm/pkg/contract/privacyapi"
	"github.com/opencrm/crm/pkg/customfield"
	"github.com/opencrm/crm/pkg/httpx"
	"github.com/opencrm/crm/services/deals/internal/api"
	"github.com/opencrm/crm/services/deals/internal/deals"
	"github.com/opencrm/crm/services/deals/internal/store"
)

// privacyEnv is newEnv's database and store served with deals' privacy
// part mounted, as the binary serves it.
func privacyEnv(t *testing.T) *env {
	t.Helper()
	e := newEnv(t)
	svc, err := deals.NewService(e.store, contactsapi.New("http://127.0.0.1:1", secret), leadsapi.New("http://127.0.0.1:1", secret))
	if err != nil {
		t.Fatal(err)
	}
	part, err := store.NewPrivacy(e.db)
	if err != nil {
		t.Fatal(err)
	}
	h, err := api.New(api.Config{Service: svc, Verifier: e.issuer.Verifier(t), InternalSecret: secret,
		Properties: customfield.Store{DB: e.db, Stream: store.Stream}, DB: e.db,
		Privacy: api.Privacy{DB: e.db, Part: part}})
	if err != nil {
		t.Fatal(err)
	}
	ops, err := httpx.NewOps()
	if err != nil {
		t.Fatal(err)
	}
	e.h = ops.Handler(h)
	return e
}

// TestPrivacyRoutes: the internal privacy routes take the internal
// secret and a subject with an address; the export lists the deals of
// the subject's contacts; an erasure unlinks them once: the same erasure
// id again answers the same receipt and changes nothing.
func TestPrivacyRoutes(t *testing.T) {
	t.Parallel()
	e := privacyEnv(t)
	ctx := context.Background()
	first, err := e.store.FirstStage(ctx, deals.StatusOpen)
	if err != nil {
		t.Fatal(err)
	}
	ann, other := int64(500), int64(501)
	mine, err := e.store.CreateDeal(ctx, deals.DealRecord{Title: "Ann's", Value: decimal.NewFromInt(5), Currency: "USD",
		StageID: first.ID, ContactID: &ann})
	if err != nil {
		t.Fatal(err)
	}
	theirs, err := e.store.CreateDeal(ctx, deals.DealRecord{Title: "Carl's", Value: decimal.NewFromInt(6), Currency: "USD",
		StageID: first.ID, ContactID: &other})
	if err != nil {
		t.Fatal(err)
	}
	subject := privacyapi.Subject{Email: "pia@acme.test", ContactIDs: []int64{ann}}

	t.Run("refusals", func(t *testing.T) {
		for _, c := range []struct {
			name   string
			r      resp
			status int
			body   string
		}{
			{"empty email", e.internal(http.MethodPost, privacyapi.PathExport, map[string]any{"email": "  "}), 422,
				`{"type":"/docs/problems#validation_failed","title":"Unprocessable Entity","status":422,"detail":"one or more fields are invalid","code":"validation_failed","errors":[{"field":"email","message":"is required"}]}`},
			{"empty email on an erasure", e.internal(http.MethodPost, privacyapi.ErasurePath(1), map[string]any{"email": ""}), 422,
				`{"type":"/docs/problems#validation_failed","title":"Unprocessable Entity","status":422,"detail":"one or more fields are invalid","code":"validation_failed","errors":[{"field":"email","message":"is required"}]}`},
			{"no secret", e.do(http.MethodPost, privacyapi.PathExport, "", subject), 401,
				`{"type":"/docs/problems#unauthenticated","title":"Unauthorized","status":401,"detail":"internal route","code":"unauthenticated"}`},
		} {
			t.Run(c.name, func(t *testing.T) {
				if c.r.Status != c.status {
					t.Fatalf("status %d, want %d: %s", c.r.Status, c.status, c.r.Body)
				}
				if got := c.r.Header.Get("Content-Type"); got != "application/problem+json" {
					t.Errorf("content type %q", got)
				}
				if diff := cmp.Diff(problemBody(t, []byte(c.body)), problemBody(t, c.r.Body)); diff != "" {
					t.Errorf("body (-want +got):\n%s", diff)
				}
			})
		}
	})

	var export privacyapi.ExportPart
	e.data(e.internal(http.MethodPost, privacyapi.PathExport, subject), http.StatusOK, &export)
	if diff := cmp.Diff([]int64{mine.ID}, export.DealIDs); diff != "" {
		t.Errorf("exported deal ids (-want +got):\n%s", diff)
	}
	var doc struct {
		Deals []store.DealRef `json:"deals"`
	}
	if err := json.Unmarshal(export.Data, &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Deals) != 1 || doc.Deals[0].ID != mine.ID || doc.Deals[0].Value != "5.00" {
		t.Errorf("export = %s, want deal %d alone", export.Data, mine.ID)
	}

	erase := e.internal(http.MethodPost, privacyapi.ErasurePath(9), subject)
	var part privacyapi.ErasePart
	e.data(erase, http.StatusOK, &part)
	want := privacyapi.ErasePart{Found: privacyapi.Found{DealIDs: []int64{mine.ID}}, Receipt: privacyapi.Receipt{
		Context: privacyapi.Deals, Status: privacyapi.StatusCompleted,
		Erased: map[string]int64{}, Redacted: map[string]int64{"deals": 1}, Kept: []privacyapi.Kept{}}}
	if diff := cmp.Diff(want, part); diff != "" {
		t.Errorf("erasure (-want +got):\n%s", diff)
	}
	after, err := e.store.GetDeal(ctx, mine.ID)
	if err != nil {
		t.Fatal(err)
	}
	if after.ContactID != nil {
		t.Errorf("deal %d still names contact %d", mine.ID, *after.ContactID)
	}
	var entries int
	if err := e.db.QueryRow(ctx, `SELECT count(*) FROM history`).Scan(&entries); err != nil {
		t.Fatal(err)
	}

	again := e.internal(http.MethodPost, privacyapi.ErasurePath(9), subject)
	if again.Status != http.StatusOK || string(again.Body) != string(erase.Body) {
		t.Errorf("repeated erasure: %d %s, want %s", again.Status, again.Body, erase.Body)
	}
	still, err := e.store.GetDeal(ctx, mine.ID)
	if err != nil {
		t.Fatal(err)
	}
	var entriesAgain int
	if err := e.db.QueryRow(ctx, `SELECT count(*) FROM history`).Scan(&entriesAgain); err != nil {
		t.Fatal(err)
	}
	if !still.UpdatedAt.Equal(after.UpdatedAt.Time) || entriesAgain != entries {
		t.Errorf("the repeated erasure changed something: updated_at %v → %v, history %d → %d",
			after.UpdatedAt, still.UpdatedAt, entries, entriesAgain)
	}
	untouched, err := e.store.GetDeal(ctx, theirs.ID)
	if err != nil {
		t.Fatal(err)
	}
	if untouched.ContactID == nil || *untouched.ContactID != other || !untouched.UpdatedAt.Equal(theirs.UpdatedAt.Time) {
		t.Errorf("another person's deal changed: %+v", untouched.Deal)
	}
}

func problemBody(t *testing.T, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("decode %s: %v", b, err)
	}
	delete(m, "request_id")
	return m
}
