package store

import (
	"context"
	"encoding/json"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"
	"github.com/shopspring/decimal"

	"github.com/opencrm/crm/pkg/contract/identityapi"
	"github.com/opencrm/crm/pkg/fault"
	"github.com/opencrm/crm/services/deals/internal/deals"
)

// TestDeletesAudited: deleting a deal or a quote records the audit log's
// record.deleted in the deletion's transaction; a deletion of nothing
// records nothing.
func TestDeletesAudited(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newStore(t)
	first, err := s.FirstStage(ctx, deals.StatusOpen)
	if err != nil {
		t.Fatal(err)
	}
	d, err := s.CreateDeal(ctx, deals.DealRecord{Title: "Gone", Value: decimal.Zero, Currency: "USD", StageID: first.ID})
	if err != nil {
		t.Fatal(err)
	}
	q, err := s.CreateQuote(ctx, d.ID, deals.QuoteRecord{Status: "draft", Currency: "USD"})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteQuote(ctx, q.ID); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteQuote(ctx, q.ID); fault.KindOf(err) != fault.KindNotFound {
		t.Fatalf("second quote delete: %v", err)
	}
	if err := s.DeleteDeal(ctx, d.ID); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteDeal(ctx, d.ID); fault.KindOf(err) != fault.KindNotFound {
		t.Fatalf("second deal delete: %v", err)
	}
	rows, err := s.db.Query(ctx, `SELECT payload::text FROM outbox WHERE stream = $1 ORDER BY id`, identityapi.AuditStream)
	if err != nil {
		t.Fatal(err)
	}
	payloads, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	type entry struct{ Action, Object, ID string }
	got := []entry{}
	for _, p := range payloads {
		var m identityapi.AuditMessage
		if err := json.Unmarshal([]byte(p), &m); err != nil {
			t.Fatal(err)
		}
		if m.Target == nil {
			t.Fatalf("entry without a target: %s", p)
		}
		got = append(got, entry{m.Action, m.Target.Object, m.Target.ID})
	}
	want := []entry{
		{identityapi.AuditRecordDeleted, "quote", strconv.FormatInt(q.ID, 10)},
		{identityapi.AuditRecordDeleted, "deal", strconv.FormatInt(d.ID, 10)},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("audit entries (-want +got):\n%s", diff)
	}
}
