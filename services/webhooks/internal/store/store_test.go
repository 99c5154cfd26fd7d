package store_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/opencrm/crm/pkg/db"
	"github.com/opencrm/crm/pkg/outbox"
	"github.com/opencrm/crm/pkg/testdb"
	"github.com/opencrm/crm/services/webhooks/internal/store"
	"github.com/opencrm/crm/services/webhooks/migrations"
)

func newStore(t *testing.T) (*store.Store, *db.DB) {
	t.Helper()
	d := testdb.New(t, "webhooks", func(ctx context.Context, d *db.DB) error {
		if err := db.Migrate(ctx, d, "webhooks", migrations.FS); err != nil {
			return err
		}
		return outbox.Migrate(ctx, d)
	}, migrations.FS, outbox.Migrations)
	st, err := store.New(d)
	if err != nil {
		t.Fatal(err)
	}
	return st, d
}

func count(t *testing.T, d *db.DB, sql string) int {
	t.Helper()
	var n int
	if err := d.QueryRow(context.Background(), sql).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestIngestMatchesSubscriptions: only active subscriptions to the type
// (or *) that existed when the change happened get a delivery; a second
// copy of the same outbox row changes nothing.
func TestIngestMatchesSubscriptions(t *testing.T) {
	t.Parallel()
	st, d := newStore(t)
	ctx := context.Background()
	before := time.Now().Add(-time.Minute)
	mk := func(events []string, active bool) int64 {
		w, err := st.Create(ctx, store.NewSubscription{URL: "https://x.example/", Events: events, Active: active,
			Secret: []byte{1}, Fingerprint: "x"}, 25)
		if err != nil {
			t.Fatal(err)
		}
		return w.ID
	}
	exact := mk([]string{"deal.created"}, true)
	all := mk([]string{"*"}, true)
	mk([]string{"deal.updated"}, true)
	mk([]string{"*"}, false)
	ev := store.NewEvent{Source: "deals", SourceID: 7, Type: "deal.created", RecordID: "3", Data: json.RawMessage(`{"id":3}`), OccurredAt: time.Now()}
	for i, want := range []bool{true, false} {
		added, err := st.Ingest(ctx, ev)
		if err != nil || added != want {
			t.Fatalf("ingest #%d = %v, %v", i+1, added, err)
		}
	}
	// Happened before every subscription existed: stored, delivered to none.
	old := ev
	old.SourceID, old.OccurredAt = 8, before
	if _, err := st.Ingest(ctx, old); err != nil {
		t.Fatal(err)
	}
	if n := count(t, d, `SELECT count(*) FROM events`); n != 2 {
		t.Fatalf("%d events", n)
	}
	var subs []int64
	rows, _ := d.Query(ctx, `SELECT subscription_id FROM deliveries ORDER BY subscription_id`)
	for rows.Next() {
		var id int64
		_ = rows.Scan(&id)
		subs = append(subs, id)
	}
	if len(subs) != 2 || subs[0] != exact || subs[1] != all {
		t.Fatalf("deliveries to %v, want [%d %d]", subs, exact, all)
	}
	// Deleting a subscription takes its deliveries.
	if err := st.Delete(ctx, exact); err != nil {
		t.Fatal(err)
	}
	if n := count(t, d, `SELECT count(*) FROM deliveries`); n != 1 {
		t.Fatalf("%d deliveries after deleting a subscription", n)
	}
}

func TestRetention(t *testing.T) {
	t.Parallel()
	st, d := newStore(t)
	ctx := context.Background()
	w, err := st.Create(ctx, store.NewSubscription{URL: "https://x.example/", Events: []string{"*"}, Active: true,
		Secret: []byte{1}, Fingerprint: "x"}, 25)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if _, err := st.Ingest(ctx, store.NewEvent{Source: "contacts", SourceID: int64(i + 1), Type: "contact.created",
			RecordID: "1", Data: json.RawMessage(`{}`), OccurredAt: time.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := st.NewPing(ctx, w.ID); err != nil {
		t.Fatal(err)
	}
	// Event 1 is 31 days old; the ping finished 31 days ago.
	_, err = d.Exec(ctx, `UPDATE events SET stored_at = now() - interval '31 days' WHERE seq = 1;
		UPDATE deliveries SET status = 'failed', created_at = now() - interval '31 days' WHERE event_seq IS NULL`)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Retention(ctx, 30*24*time.Hour); err != nil {
		t.Fatal(err)
	}
	if e, dl := count(t, d, `SELECT count(*) FROM events`), count(t, d, `SELECT count(*) FROM deliveries`); e != 2 || dl != 2 {
		t.Fatalf("after retention: %d events, %d deliveries; want 2, 2", e, dl)
	}
}

// TestIngestAllOrderAndRepeats: one call stores a read's events in the
// order given with consecutive ids, once each even when the read repeats
// one, numbers their deliveries in event order, and says how many of
// either were new: events with no subscriber make no delivery due.
func TestIngestAllOrderAndRepeats(t *testing.T) {
	t.Parallel()
	st, d := newStore(t)
	ctx := context.Background()
	ev := func(id int64, part int, typ string) store.NewEvent {
		return store.NewEvent{Source: "contacts", SourceID: id, Part: part, Type: typ, RecordID: "9",
			Data: json.RawMessage(`{"id":9}`), OccurredAt: time.Now()}
	}
	unsubscribed := []store.NewEvent{ev(1, 0, "contact.updated")}
	if n, err := st.IngestAll(ctx, unsubscribed); err != nil || n != (store.Ingested{Events: 1}) {
		t.Fatalf("IngestAll with no subscription = %+v, %v; want 1 event, no delivery", n, err)
	}
	if _, err := st.Create(ctx, store.NewSubscription{URL: "https://x.example/", Events: []string{"*"}, Active: true,
		Secret: []byte{1}, Fingerprint: "x"}, 25); err != nil {
		t.Fatal(err)
	}
	read := []store.NewEvent{ev(5, 0, "contact.updated"), ev(3, 1, "contact.created"), ev(5, 0, "contact.updated"), ev(3, 2, "contact.created")}
	if n, err := st.IngestAll(ctx, read); err != nil || n != (store.Ingested{Events: 3, Deliveries: 3}) {
		t.Fatalf("IngestAll = %+v, %v; want 3 new events and deliveries", n, err)
	}
	if n, err := st.IngestAll(ctx, read); err != nil || n != (store.Ingested{}) {
		t.Fatalf("again = %+v, %v; want nothing new", n, err)
	}
	rows, err := d.Query(ctx, `SELECT e.seq, e.source_id, e.part FROM events e JOIN deliveries d ON d.event_seq = e.seq ORDER BY d.id`)
	if err != nil {
		t.Fatal(err)
	}
	var got [][3]int64
	for rows.Next() {
		var r [3]int64
		if err := rows.Scan(&r[0], &r[1], &r[2]); err != nil {
			t.Fatal(err)
		}
		got = append(got, r)
	}
	if want := [][3]int64{{2, 5, 0}, {3, 3, 1}, {4, 3, 2}}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("events by delivery order %v, want %v", got, want)
	}
}
