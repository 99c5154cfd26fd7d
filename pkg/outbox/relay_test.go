package outbox_test

import (
	"context"
	"encoding/json"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"

	"github.com/opencrm/crm/pkg/outbox"
	"github.com/opencrm/crm/pkg/testdb"
)

// TestRelayDeletesWhatRedisHas: a pass that cannot reach Redis leaves its
// events in the table; the next deletes them once they are on the stream,
// in outbox order, each with its type beside it. A row a previous release
// marked published is neither relayed again nor deleted by a pass.
func TestRelayDeletesWhatRedisHas(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := testdb.New(t, "outboxtest", outbox.Migrate, outbox.Migrations)
	rdb := newRedis(t)
	stream := randStream(t, rdb)
	if _, err := d.Exec(ctx, `INSERT INTO outbox (stream, type, aggregate_id, payload, published_at)
		VALUES ($1, 'thing.created', '0', '{"id":0}', now())`, stream); err != nil {
		t.Fatal(err)
	}
	err := d.InTx(ctx, func(tx pgx.Tx) error {
		return outbox.AddMany(ctx, tx, stream, []outbox.Record{
			{Type: "thing.created", AggregateID: "1", Data: map[string]int{"id": 1}},
			{Type: "thing.updated", AggregateID: "1", Data: map[string]int{"id": 1}},
			{Type: "other.created", AggregateID: "2", Data: map[string]int{"id": 2}},
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	count := func() (unpublished, published int) {
		t.Helper()
		if err := d.QueryRow(ctx, `SELECT count(*) FILTER (WHERE published_at IS NULL),
			count(*) FILTER (WHERE published_at IS NOT NULL) FROM outbox`).Scan(&unpublished, &published); err != nil {
			t.Fatal(err)
		}
		return unpublished, published
	}

	away := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
	t.Cleanup(func() { _ = away.Close() })
	if n, err := (&outbox.Relay{DB: d, Redis: away}).Once(ctx); err == nil || n != 0 {
		t.Fatalf("Once without Redis = %d, %v; want an error", n, err)
	}
	if u, p := count(); u != 3 || p != 1 {
		t.Fatalf("after a failed pass: %d unpublished, %d published rows; want 3 and 1", u, p)
	}

	if n, err := (&outbox.Relay{DB: d, Redis: rdb}).Once(ctx); err != nil || n != 3 {
		t.Fatalf("Once = %d, %v; want 3", n, err)
	}
	if u, p := count(); u != 0 || p != 1 {
		t.Fatalf("after a pass: %d unpublished, %d published rows; want 0 and 1", u, p)
	}
	msgs, err := rdb.XRange(ctx, stream, "-", "+").Result()
	if err != nil {
		t.Fatal(err)
	}
	type message struct{ Type, FieldType, Aggregate string }
	var got []message
	for _, m := range msgs {
		var ev outbox.Event
		if err := json.Unmarshal([]byte(m.Values["event"].(string)), &ev); err != nil {
			t.Fatal(err)
		}
		got = append(got, message{ev.Type, m.Values["type"].(string), ev.AggregateID})
	}
	want := []message{{"thing.created", "thing.created", "1"}, {"thing.updated", "thing.updated", "1"}, {"other.created", "other.created", "2"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("stream (-want +got):\n%s", diff)
	}
}

// TestConsumerSkipsOtherTypes: a consumer limited to some types
// acknowledges a message whose "type" field names another without
// handing it over, and decodes and hands over the rest, a message
// without the field (a previous release's relay) included.
func TestConsumerSkipsOtherTypes(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rdb := newRedis(t)
	stream := randStream(t, rdb)
	event := func(id int, typ string) string {
		return `{"id":` + strconv.Itoa(id) + `,"type":"` + typ + `","aggregate_id":"1","occurred_at":"2026-11-28T10:00:00Z","data":{}}`
	}
	for _, v := range []map[string]any{
		{"event": event(1, "company.created"), "type": "company.created"},
		{"event": event(2, "contact.created"), "type": "contact.created"},
		{"event": event(3, "company.updated")},
		{"event": event(4, "contact.deleted")},
		{"event": event(5, "company.updated"), "type": "company.updated"},
	} {
		if err := rdb.XAdd(ctx, &redis.XAddArgs{Stream: stream, Values: v}).Err(); err != nil {
			t.Fatal(err)
		}
	}
	for _, batch := range []bool{false, true} {
		var mu sync.Mutex
		var got []int64
		c := &outbox.Consumer{Redis: rdb, Stream: stream, Group: map[bool]string{false: "one", true: "batch"}[batch],
			Name: "n", Types: []string{"company.created", "company.updated"}}
		if batch {
			c.HandleBatch = func(_ context.Context, evs []outbox.Event) error {
				mu.Lock()
				defer mu.Unlock()
				for _, ev := range evs {
					got = append(got, ev.ID)
				}
				return nil
			}
		} else {
			c.Handle = func(_ context.Context, ev outbox.Event) error {
				mu.Lock()
				defer mu.Unlock()
				got = append(got, ev.ID)
				return nil
			}
		}
		cctx, stop := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { defer close(done); c.Run(cctx) }()
		deadline := time.Now().Add(10 * time.Second)
		for {
			info, err := rdb.XInfoGroups(ctx, stream).Result()
			acked := err == nil
			for _, g := range info {
				if g.Name == c.Group {
					acked = acked && g.Pending == 0 && g.LastDeliveredID != "0-0"
				}
			}
			mu.Lock()
			n := len(got)
			mu.Unlock()
			if acked && n >= 4 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("batch %v: after 10 s handled %d, groups %+v, %v", batch, n, info, err)
			}
			time.Sleep(20 * time.Millisecond)
		}
		stop()
		<-done
		// 1 and 5 by their type field; 3 and 4 have none, so they are
		// decoded and handed over (a handler ignores what it does not
		// follow); 2 is acknowledged, never handed over.
		if diff := cmp.Diff([]int64{1, 3, 4, 5}, got); diff != "" {
			t.Errorf("batch %v: handled (-want +got):\n%s", batch, diff)
		}
	}
}
