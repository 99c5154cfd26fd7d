package outbox_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"

	"github.com/opencrm/crm/pkg/outbox"
	"github.com/opencrm/crm/pkg/testdb"
)

// TestSchemaVersionRelayed: every event on a stream carries
// schema_version, 1 (outbox.SchemaVersion) unless its record names
// another, and a row written without one (by a release before versions)
// is relayed as 1.
func TestSchemaVersionRelayed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := testdb.New(t, "outboxtest", outbox.Migrate, outbox.Migrations)
	rdb := newRedis(t)
	stream := randStream(t, rdb)
	if err := d.InTx(ctx, func(tx pgx.Tx) error {
		if err := outbox.Add(ctx, tx, stream, "thing.created", "1", map[string]int{"id": 1}); err != nil {
			return err
		}
		if err := outbox.AddMany(ctx, tx, stream, []outbox.Record{
			{Type: "thing.updated", AggregateID: "1", Data: map[string]int{"id": 1}, SchemaVersion: 2},
		}); err != nil {
			return err
		}
		// What the previous release's AddMany writes: no schema_version.
		_, err := tx.Exec(ctx, `INSERT INTO outbox (stream, type, aggregate_id, payload) VALUES ($1, 'thing.deleted', '1', '{"id":1}')`, stream)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if n, err := (&outbox.Relay{DB: d, Redis: rdb}).Once(ctx); err != nil || n != 3 {
		t.Fatalf("Once = %d, %v", n, err)
	}
	entries, err := rdb.XRange(ctx, stream, "-", "+").Result()
	if err != nil {
		t.Fatal(err)
	}
	type onStream struct {
		Type          string
		SchemaVersion any
	}
	var got []onStream
	for _, e := range entries {
		var m map[string]any
		if err := json.Unmarshal([]byte(e.Values["event"].(string)), &m); err != nil {
			t.Fatal(err)
		}
		got = append(got, onStream{m["type"].(string), m["schema_version"]})
	}
	want := []onStream{{"thing.created", 1.0}, {"thing.updated", 2.0}, {"thing.deleted", 1.0}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events on the stream (-want +got):\n%s", diff)
	}
}

// TestConsumerIgnoresUnknown: a consumer reads an event relayed by the
// previous release (no schema_version: version 1), one carrying fields it
// does not know (at the top and in data) and one of a type it does not
// know; it handles the first two, ignores the third, skips a version of
// a type newer than it reads, and every one is acknowledged: nothing is
// retried in a loop.
func TestConsumerIgnoresUnknown(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rdb := newRedis(t)
	stream := randStream(t, rdb)
	for _, body := range []string{
		`{"id":1,"type":"thing.created","aggregate_id":"1","occurred_at":"2026-11-28T10:00:00Z","data":{"id":1,"name":"a"}}`,
		`{"id":2,"type":"thing.created","schema_version":1,"aggregate_id":"2","occurred_at":"2026-11-28T10:00:00Z","priority":"high","data":{"id":2,"name":"b","colour":"red"}}`,
		`{"id":3,"type":"thing.teleported","schema_version":1,"aggregate_id":"3","occurred_at":"2026-11-28T10:00:00Z","data":{"to":"mars"}}`,
		// A newer release's version 2 of thing.created, published beside
		// version 1: not read by this release's consumer.
		`{"id":4,"type":"thing.created","schema_version":2,"aggregate_id":"4","occurred_at":"2026-11-28T10:00:00Z","data":{"thing":{"id":4}}}`,
	} {
		if err := rdb.XAdd(ctx, &redis.XAddArgs{Stream: stream, Values: map[string]any{"event": body}}).Err(); err != nil {
			t.Fatal(err)
		}
	}
	type thing struct {
		ID   int64  `json:"id"`
		Name string `json:"name"`
	}
	type handled struct {
		Version int
		Thing   thing
	}
	var mu sync.Mutex
	var got []handled
	calls := 0
	c := &outbox.Consumer{Redis: rdb, Stream: stream, Group: "g", Name: "n", RetryIdle: 100 * time.Millisecond,
		Handle: func(_ context.Context, ev outbox.Event) error {
			mu.Lock()
			defer mu.Unlock()
			calls++
			if ev.Type != "thing.created" {
				return nil // not ours: ignored
			}
			var th thing
			if err := json.Unmarshal(ev.Data, &th); err != nil {
				return err
			}
			got = append(got, handled{ev.Version(), th})
			return nil
		}}
	done := make(chan struct{})
	go func() { defer close(done); c.Run(ctx) }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		pending, err := rdb.XPending(ctx, stream, "g").Result()
		mu.Lock()
		n := calls
		mu.Unlock()
		if err == nil && pending.Count == 0 && n >= 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 10 s: %d calls, pending %+v, %v", n, pending, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	// Long enough for a retry of anything left pending to show.
	time.Sleep(300 * time.Millisecond)
	cancel()
	<-done
	want := []handled{{1, thing{1, "a"}}, {1, thing{2, "b"}}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("handled (-want +got):\n%s", diff)
	}
	if calls != 3 {
		t.Errorf("handler called %d times, want 3 (once each but the newer version, no retry)", calls)
	}
}

// TestBatchConsumerSkipsNewerVersions: a batch consumer gets the events
// whose version it reads (Reads, or up to SchemaVersion) and every one is
// acknowledged.
func TestBatchConsumerSkipsNewerVersions(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		reads func(outbox.Event) bool
		want  []int64
	}{
		{"default", nil, []int64{1, 2}},
		{"reads version 2 of thing.created only", func(ev outbox.Event) bool {
			return ev.Type != "thing.created" || ev.Version() == 2
		}, []int64{3}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			rdb := newRedis(t)
			stream := randStream(t, rdb)
			for _, body := range []string{
				`{"id":1,"type":"thing.created","aggregate_id":"1","data":{}}`,
				`{"id":2,"type":"thing.created","schema_version":1,"aggregate_id":"2","extra":true,"data":{}}`,
				`{"id":3,"type":"thing.created","schema_version":2,"aggregate_id":"2","data":{}}`,
			} {
				if err := rdb.XAdd(ctx, &redis.XAddArgs{Stream: stream, Values: map[string]any{"event": body}}).Err(); err != nil {
					t.Fatal(err)
				}
			}
			var mu sync.Mutex
			var got []int64
			c := &outbox.Consumer{Redis: rdb, Stream: stream, Group: "g", Name: "n", Reads: tc.reads,
				HandleBatch: func(_ context.Context, evs []outbox.Event) error {
					mu.Lock()
					defer mu.Unlock()
					for _, ev := range evs {
						got = append(got, ev.ID)
					}
					return nil
				}}
			done := make(chan struct{})
			go func() { defer close(done); c.Run(ctx) }()
			deadline := time.Now().Add(10 * time.Second)
			for {
				info, err := rdb.XInfoGroups(ctx, stream).Result()
				if err == nil && len(info) == 1 && info[0].Pending == 0 && info[0].EntriesRead == 3 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("after 10 s: groups %+v, %v", info, err)
				}
				time.Sleep(20 * time.Millisecond)
			}
			cancel()
			<-done
			mu.Lock()
			defer mu.Unlock()
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("handled (-want +got):\n%s", diff)
			}
		})
	}
}
