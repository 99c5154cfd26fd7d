package store

import (
	"context"
	"encoding/json"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"
	"github.com/shopspring/decimal"

	"github.com/opencrm/crm/pkg/contract/privacyapi"
	"github.com/opencrm/crm/pkg/privacy"
	"github.com/opencrm/crm/services/deals/internal/deals"
)

// TestPrivacy: the export lists the deals of the subject's contacts, and
// only theirs, as references; the erasure unlinks the contacts from those
// deals (recorded in history via erasure, with a deal.updated naming no
// contact), answers their ids, and leaves every other deal as it was; a
// repeated erasure answers the first receipt and changes nothing.
func TestPrivacy(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newStore(t)
	p, err := NewPrivacy(s.db)
	if err != nil {
		t.Fatal(err)
	}
	first, err := s.FirstStage(ctx, deals.StatusOpen)
	if err != nil {
		t.Fatal(err)
	}
	company := int64(7)
	create := func(title, value string, contact *int64) deals.Deal {
		t.Helper()
		d, err := s.CreateDeal(ctx, deals.DealRecord{Title: title, Value: decimal.RequireFromString(value), Currency: "EUR",
			StageID: first.ID, CompanyID: &company, ContactID: contact})
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	ann, annToo, other := int64(10), int64(11), int64(99)
	a := create("Ann's retrofit", "1500.5", &ann)
	b := create("Ann's second", "20", &annToo)
	c := create("Someone else's", "30", &other)
	none := create("Nobody's", "40", nil)
	subject := privacyapi.Subject{Email: "ann@example.com", ContactIDs: []int64{ann, annToo}}

	part, err := p.Export(ctx, subject)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]int64{a.ID, b.ID}, part.DealIDs); diff != "" {
		t.Errorf("export's deal ids (-want +got):\n%s", diff)
	}
	var doc map[string][]DealRef
	if err := json.Unmarshal(part.Data, &doc); err != nil {
		t.Fatal(err)
	}
	ref := func(d deals.Deal, value string) DealRef {
		return DealRef{ID: d.ID, Title: d.Title, Stage: first.Name, Value: value, Currency: "EUR",
			Status: "open", CompanyID: &company, CreatedAt: d.CreatedAt}
	}
	if diff := cmp.Diff(map[string][]DealRef{"deals": {ref(a, "1500.50"), ref(b, "20.00")}}, doc); diff != "" {
		t.Errorf("export (-want +got):\n%s", diff)
	}
	nobody, err := p.Export(ctx, privacyapi.Subject{Email: "nobody@example.com"})
	if err != nil {
		t.Fatal(err)
	}
	if string(nobody.Data) != `{"deals":[]}` || nobody.DealIDs != nil {
		t.Errorf("export of nobody = %s %v, want no deals", nobody.Data, nobody.DealIDs)
	}

	want := privacyapi.ErasePart{Found: privacyapi.Found{DealIDs: []int64{a.ID, b.ID}}, Receipt: privacyapi.Receipt{
		Context: privacyapi.Deals, Status: privacyapi.StatusCompleted,
		Erased: map[string]int64{}, Redacted: map[string]int64{"deals": 2}, Kept: []privacyapi.Kept{}}}
	for i := range 2 {
		got, err := privacy.Erase(ctx, s.db, privacyapi.Deals, 5, subject, p)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("erasure %d (-want +got):\n%s", i+1, diff)
		}
	}
	contacts := map[int64]*int64{}
	for _, d := range []deals.Deal{a, b, c, none} {
		got, err := s.GetDeal(ctx, d.ID)
		if err != nil {
			t.Fatal(err)
		}
		contacts[d.ID] = got.ContactID
	}
	if diff := cmp.Diff(map[int64]*int64{a.ID: nil, b.ID: nil, c.ID: &other, none.ID: nil}, contacts); diff != "" {
		t.Errorf("contacts after the erasure (-want +got):\n%s", diff)
	}

	// One history entry per unlinked deal, via erasure, and one
	// deal.updated each with the contact gone: the second call ran nothing.
	rows, err := s.db.Query(ctx, `SELECT record_id, via, before::text, after::text FROM history
		WHERE object = 'deal' AND action = 'updated' ORDER BY record_id`)
	if err != nil {
		t.Fatal(err)
	}
	type entry struct {
		ID                 int64
		Via, Before, After string
	}
	entries, err := pgx.CollectRows(rows, pgx.RowToStructByPos[entry])
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]entry{
		{a.ID, "erasure", `{"contact_id": 10}`, `{"contact_id": null}`},
		{b.ID, "erasure", `{"contact_id": 11}`, `{"contact_id": null}`},
	}, entries); diff != "" {
		t.Errorf("history (-want +got):\n%s", diff)
	}
	rows, err = s.db.Query(ctx, `SELECT aggregate_id, payload::jsonb ? 'contact_id' AND payload::jsonb->'contact_id' = 'null' FROM outbox
		WHERE stream = $1 AND type = $2 ORDER BY id`, Stream, deals.EventDealUpdated)
	if err != nil {
		t.Fatal(err)
	}
	type event struct {
		ID        string
		NoContact bool
	}
	events, err := pgx.CollectRows(rows, pgx.RowToStructByPos[event])
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]event{{strconv.FormatInt(a.ID, 10), true}, {strconv.FormatInt(b.ID, 10), true}}, events); diff != "" {
		t.Errorf("deal.updated events (-want +got):\n%s", diff)
	}
}
