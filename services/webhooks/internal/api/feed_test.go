package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"

	"github.com/opencrm/crm/pkg/contract/contactsapi"
	"github.com/opencrm/crm/pkg/outbox"
	"github.com/opencrm/crm/pkg/problem/problemtest"
	"github.com/opencrm/crm/pkg/testdb"
	"github.com/opencrm/crm/services/webhooks/internal/ingest"
)

type feed struct {
	Success   bool        `json:"success"`
	Data      []sentEvent `json:"data"`
	HasMore   bool        `json:"has_more"`
	NextAfter *string     `json:"next_after"`
}

// TestIngestFromStream reads a real Redis stream written as the outbox
// relay writes it, the same message twice: one event is stored, one
// delivery made.
func TestIngestFromStream(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	rc := newReceiver(t, nil)
	h := e.create(rc.url(), "contact.created", "contact.deleted")
	stream := "test:webhooks:" + randHex(6)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() { e.rdb.Del(context.Background(), stream) })
	c := &outbox.Consumer{Redis: e.rdb, Stream: stream, Group: ingest.Group, Name: "test",
		Handle: e.ingest.Handler("contacts"), Log: e.log, RetryIdle: time.Second}
	done := make(chan struct{})
	go func() { defer close(done); c.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })

	add := func(ev outbox.Event) {
		body, _ := json.Marshal(ev)
		if err := e.rdb.XAdd(ctx, &redis.XAddArgs{Stream: stream, Values: map[string]any{"event": body}}).Err(); err != nil {
			t.Fatal(err)
		}
	}
	now := time.Now()
	created := outbox.Event{ID: 11, Type: "contact.created", AggregateID: "5", OccurredAt: now, Data: json.RawMessage(`{"id":5,"email":"a@example.com"}`)}
	add(created)
	add(created) // the relay published it twice
	add(outbox.Event{ID: 12, Type: "contact.merged_internally", AggregateID: "5", OccurredAt: now, Data: json.RawMessage(`{}`)})
	add(outbox.Event{ID: 13, Type: "contact.deleted", AggregateID: "5", OccurredAt: now, Data: json.RawMessage(`{"id":5}`)})

	var f feed
	eventually(t, "two events in the feed", func() bool {
		f = decode[feed](t, e.do("GET", "/events", e.admin, nil))
		return len(f.Data) == 2
	})
	if f.Data[0].ID != "evt_1" || f.Data[0].Type != "contact.created" || string(f.Data[0].Data) != `{"id":5,"email":"a@example.com"}` ||
		f.Data[1].Type != "contact.deleted" || f.HasMore || *f.NextAfter != "evt_2" {
		t.Fatalf("feed %+v", f)
	}
	eventually(t, "both delivered in order", func() bool { return rc.count() == 2 })
	if a, b := rc.got()[0].header.Get("webhook-id"), rc.got()[1].header.Get("webhook-id"); a != "evt_1" || b != "evt_2" {
		t.Fatalf("receiver got %s, %s", a, b)
	}
	time.Sleep(200 * time.Millisecond)
	if n := len(e.deliveries(h.ID, "")); n != 2 {
		t.Fatalf("%d deliveries, want 2", n)
	}
}

// TestIngestExpandsImports: a CSV import publishes one contacts.imported
// per 1,000 contacts; webhooks turns it into one contact.created per
// contact with the record read from contacts, skips a contact deleted
// since, and stores each once when the event comes twice.
func TestIngestExpandsImports(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	rc := newReceiver(t, nil)
	e.create(rc.url(), "contact.created")
	ctx := context.Background()
	_, client := e.contacts.Start(t)
	var ids []int64
	for i, name := range []string{"Ada", "Grace"} {
		id, err := client.CreateContact(ctx, fmt.Sprint("imp-", i), contactsapi.CreateContactRequest{FirstName: name, LastName: "Imported", Source: "import"})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	data, _ := json.Marshal(contactsapi.Imported{IDs: append(ids, 99_999)})
	ev := outbox.Event{ID: 41, Type: contactsapi.EventContactsImported, AggregateID: fmt.Sprint(ids[0]), OccurredAt: time.Now(), Data: data}
	handle := e.ingest.Handler("contacts")
	for range 2 {
		if err := handle(ctx, ev); err != nil {
			t.Fatal(err)
		}
	}
	f := decode[feed](t, e.do("GET", "/events?type=contact.created", e.admin, nil))
	var got []string
	for _, ev := range f.Data {
		var rec struct {
			ID        int64  `json:"id"`
			FirstName string `json:"first_name"`
		}
		_ = json.Unmarshal(ev.Data, &rec)
		got = append(got, fmt.Sprintf("%s %d %s", ev.Type, rec.ID, rec.FirstName))
	}
	want := []string{fmt.Sprintf("contact.created %d Ada", ids[0]), fmt.Sprintf("contact.created %d Grace", ids[1])}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("feed (-want +got):\n%s", diff)
	}
	eventually(t, "both delivered", func() bool { return rc.count() == 2 })
}

func TestFeed(t *testing.T) {
	t.Parallel()
	e := newEnv(t, noWorkers())
	types := []string{"contact.created", "deal.updated", "lead.qualified", "deal.updated", "contract.executed"}
	for i, typ := range types {
		e.emit("x", typ, strconv.Itoa(i), map[string]any{"n": i})
	}
	f := decode[feed](t, e.do("GET", "/events?limit=2", e.admin, nil))
	if len(f.Data) != 2 || f.Data[0].ID != "evt_1" || f.Data[1].ID != "evt_2" || !f.HasMore || *f.NextAfter != "evt_2" || !f.Success {
		t.Fatalf("first page %+v", f)
	}
	f = decode[feed](t, e.do("GET", "/events?limit=2&after="+*f.NextAfter, e.admin, nil))
	if len(f.Data) != 2 || f.Data[0].ID != "evt_3" || !f.HasMore {
		t.Fatalf("second page %+v", f)
	}
	f = decode[feed](t, e.do("GET", "/events?limit=2&after="+*f.NextAfter, e.admin, nil))
	if len(f.Data) != 1 || f.Data[0].ID != "evt_5" || f.HasMore || *f.NextAfter != "evt_5" {
		t.Fatalf("last page %+v", f)
	}
	f = decode[feed](t, e.do("GET", "/events?after=evt_5", e.admin, nil))
	if len(f.Data) != 0 || f.HasMore || f.NextAfter == nil || *f.NextAfter != "evt_5" {
		t.Fatalf("empty page %s", e.do("GET", "/events?after=evt_5", e.admin, nil).body)
	}
	r := e.do("GET", "/events?after=evt_5", e.admin, nil)
	if strings.TrimSpace(string(r.body)) != `{"success":true,"data":[],"has_more":false,"next_after":"evt_5"}` {
		t.Fatalf("empty page body %s", r.body)
	}
	f = decode[feed](t, e.do("GET", "/events?type=deal.updated,contract.executed", e.admin, nil))
	var got []string
	for _, ev := range f.Data {
		got = append(got, ev.ID+"/"+ev.Type)
	}
	if len(got) != 3 || got[0] != "evt_2/deal.updated" || got[1] != "evt_4/deal.updated" || got[2] != "evt_5/contract.executed" {
		t.Fatalf("type filter %v", got)
	}
	f = decode[feed](t, e.do("GET", "/events", e.admin, nil))
	if f.NextAfter == nil || *f.NextAfter != "evt_5" || len(f.Data) != 5 {
		t.Fatalf("whole feed %+v", f)
	}

	for _, q := range []struct{ query, field string }{
		{"after=5", "after"}, {"after=evt_", "after"}, {"after=evt_x", "after"}, {"after=evt_-1", "after"},
		{"type=contact.exploded", "type"}, {"type=*", "type"}, {"type=ping", "type"},
		{"limit=0", "limit"}, {"limit=1001", "limit"}, {"limit=ten", "limit"},
	} {
		r := e.do("GET", "/events?"+q.query, e.admin, nil)
		problemtest.Want(t, r.status, r.header, r.body, http.StatusUnprocessableEntity, "validation_failed", q.field)
	}
}

// TestIngestThroughRelay: a context records events in its outbox, the
// real relay publishes them (one of them twice, as after a crash between
// XADD and the commit that deletes it), and webhooks stores each once.
func TestIngestThroughRelay(t *testing.T) {
	t.Parallel()
	e := newEnv(t, noWorkers())
	producer := testdb.New(t, "contacts", outbox.Migrate, outbox.Migrations)
	stream := "test:webhooks:" + randHex(6)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() { e.rdb.Del(context.Background(), stream) })
	c := &outbox.Consumer{Redis: e.rdb, Stream: stream, Group: ingest.Group, Name: "test",
		Handle: e.ingest.Handler("contacts"), Log: e.log, RetryIdle: time.Second}
	done := make(chan struct{})
	go func() { defer close(done); c.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })

	relay := &outbox.Relay{DB: producer, Redis: e.rdb, Log: e.log}
	err := producer.InTx(ctx, func(tx pgx.Tx) error {
		return outbox.AddMany(ctx, tx, stream, []outbox.Record{
			{Type: "contact.created", AggregateID: "5", Data: map[string]any{"id": 5, "first_name": "Ada"}},
			{Type: "contact.updated", AggregateID: "5", Data: map[string]any{"id": 5, "first_name": "Ada B."}},
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	var created int64
	if err := producer.QueryRow(ctx, `SELECT id FROM outbox WHERE type = 'contact.created'`).Scan(&created); err != nil {
		t.Fatal(err)
	}
	if n, err := relay.Once(ctx); err != nil || n != 2 {
		t.Fatalf("relay = %d, %v", n, err)
	}
	// The row back, as a crash after XADD and before the delete
	// committed leaves it.
	if _, err := producer.Exec(ctx, `INSERT INTO outbox (id, stream, type, aggregate_id, payload)
		VALUES ($1, $2, 'contact.created', '5', '{"id":5,"first_name":"Ada"}')`, created, stream); err != nil {
		t.Fatal(err)
	}
	if n, err := relay.Once(ctx); err != nil || n != 1 {
		t.Fatalf("second relay = %d, %v", n, err)
	}
	eventually(t, "the stream read to its end", func() bool {
		info, err := e.rdb.XInfoGroups(ctx, stream).Result()
		return err == nil && len(info) == 1 && info[0].Lag == 0 && info[0].Pending == 0
	})
	f := decode[feed](t, e.do("GET", "/events", e.admin, nil))
	if len(f.Data) != 2 || f.Data[0].Type != "contact.created" || f.Data[1].Type != "contact.updated" ||
		string(f.Data[1].Data) != `{"id":5,"first_name":"Ada B."}` {
		t.Fatalf("feed %+v", f)
	}
}
