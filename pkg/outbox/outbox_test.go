package outbox_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"

	"github.com/opencrm/crm/pkg/db"
	"github.com/opencrm/crm/pkg/outbox"
	"github.com/opencrm/crm/pkg/testdb"
	"github.com/opencrm/crm/pkg/tracing"
)

func newRedis(t *testing.T) redis.UniversalClient {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379"})
	t.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

func randStream(t *testing.T, rdb redis.UniversalClient) string {
	t.Helper()
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	s := "test:events:" + hex.EncodeToString(b)
	t.Cleanup(func() { rdb.Del(context.Background(), s) })
	return s
}

func TestRelayAndConsume(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	d := testdb.New(t, "outboxtest", outbox.Migrate, outbox.Migrations)
	rdb := newRedis(t)
	stream := randStream(t, rdb)

	// An event written in a rolled-back transaction must never be published.
	_ = d.InTx(ctx, func(tx pgx.Tx) error {
		_ = outbox.Add(ctx, tx, stream, "thing.created", "99", map[string]int{"id": 99})
		return context.Canceled
	})
	for i := 1; i <= 3; i++ {
		err := d.InTx(ctx, func(tx pgx.Tx) error {
			return outbox.Add(ctx, tx, stream, "thing.created", "x", map[string]int{"n": i})
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	relay := &outbox.Relay{DB: d, Redis: rdb}
	n, err := relay.Once(ctx)
	if err != nil || n != 3 {
		t.Fatalf("Once = %d, %v", n, err)
	}
	if n, _ := relay.Once(ctx); n != 0 {
		t.Fatalf("second Once published %d again", n)
	}

	got := make(chan int, 10)
	failedOnce := false
	c := &outbox.Consumer{Redis: rdb, Stream: stream, Group: "g", Name: "c1", RetryIdle: 200 * time.Millisecond,
		Handle: func(ctx context.Context, ev outbox.Event) error {
			var v map[string]int
			_ = json.Unmarshal(ev.Data, &v)
			if v["n"] == 2 && !failedOnce {
				failedOnce = true
				return context.DeadlineExceeded // retried later
			}
			got <- v["n"]
			return nil
		}}
	cctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { c.Run(cctx); close(done) }()
	seen := map[int]bool{}
	for len(seen) < 3 {
		select {
		case n := <-got:
			seen[n] = true
		case <-ctx.Done():
			t.Fatalf("only saw %v", seen)
		}
	}
	stop()
	<-done
	if diff := cmp.Diff(map[int]bool{1: true, 2: true, 3: true}, seen); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	// Every handled event was acknowledged, the retried one included.
	pending, err := rdb.XPending(ctx, stream, "g").Result()
	if err != nil || pending.Count != 0 {
		t.Errorf("pending = %+v, %v", pending, err)
	}
}

func TestMigrateIsSafeConcurrently(t *testing.T) {
	t.Parallel()
	d := testdb.New(t, "outboxtest", outbox.Migrate, outbox.Migrations)
	errs := make(chan error, 4)
	for i := 0; i < 4; i++ {
		go func() { errs <- db.Migrate(context.Background(), d, "outbox", outbox.Migrations) }()
	}
	for i := 0; i < 4; i++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}

// TestOutboxVacuumsOften: the table is vacuumed after a fixed number of
// published events, not a fifth of its size, so the relay's index scan
// does not walk a growing run of dead entries.
func TestOutboxVacuumsOften(t *testing.T) {
	t.Parallel()
	d := testdb.New(t, "outboxtest", outbox.Migrate, outbox.Migrations)
	var got []string
	if err := d.QueryRow(context.Background(), `SELECT reloptions FROM pg_class WHERE oid = 'outbox'::regclass`).Scan(&got); err != nil {
		t.Fatal(err)
	}
	want := []string{"autovacuum_vacuum_scale_factor=0", "autovacuum_vacuum_threshold=5000"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("reloptions (-want +got):\n%s", diff)
	}
}

// TestPayloadIsLz4: a payload is compressed with lz4 where the server
// has it (a batch's event is tens of kilobytes), and reads back whole.
func TestPayloadIsLz4(t *testing.T) {
	t.Parallel()
	d := testdb.New(t, "outboxtest", outbox.Migrate, outbox.Migrations)
	ctx := context.Background()
	var method string
	if err := d.QueryRow(ctx, `SELECT attcompression::text FROM pg_attribute
		WHERE attrelid = 'outbox'::regclass AND attname = 'payload'`).Scan(&method); err != nil {
		t.Fatal(err)
	}
	var lz4 bool
	if err := d.QueryRow(ctx, `SELECT 'lz4' = ANY(enumvals) FROM pg_settings WHERE name = 'default_toast_compression'`).Scan(&lz4); err != nil {
		t.Fatal(err)
	}
	if want := map[bool]string{true: "l", false: ""}[lz4]; method != want {
		t.Errorf("payload compression %q, want %q (server has lz4: %v)", method, want, lz4)
	}
	records := make([]map[string]string, 200)
	for i := range records {
		records[i] = map[string]string{"first_name": "Erp", "last_name": fmt.Sprint("Customer", i)}
	}
	if err := d.InTx(ctx, func(tx pgx.Tx) error { return outbox.Add(ctx, tx, "contacts", "contacts.imported", "1", records) }); err != nil {
		t.Fatal(err)
	}
	var stored int
	var data string
	if err := d.QueryRow(ctx, `SELECT pg_column_size(payload), payload::text FROM outbox`).Scan(&stored, &data); err != nil {
		t.Fatal(err)
	}
	var got []map[string]string
	if err := json.Unmarshal([]byte(data), &got); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(records, got); diff != "" {
		t.Errorf("payload read back (-want +got):\n%s", diff)
	}
	if stored >= len(data) {
		t.Errorf("payload stored in %d bytes, %d as text: not compressed", stored, len(data))
	}
}

// TestAddManyKeepsOrder: one statement for many events, ids in the order
// given, nothing written when one cannot be encoded.
func TestAddManyKeepsOrder(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := testdb.New(t, "outboxtest", outbox.Migrate, outbox.Migrations)

	if err := outbox.AddMany(ctx, d, "s", []outbox.Record{{Type: "ok", AggregateID: "1", Data: 1}, {Type: "bad", AggregateID: "2", Data: func() {}}}); err == nil {
		t.Fatal("unencodable data: no error")
	}
	err := d.InTx(ctx, func(tx pgx.Tx) error {
		if err := outbox.Add(ctx, tx, "s", "thing.added", "0", map[string]int{"n": 0}); err != nil {
			return err
		}
		var recs []outbox.Record
		for i := 1; i <= 3; i++ {
			recs = append(recs, outbox.Record{Type: "thing.created", AggregateID: fmt.Sprint(i), Data: map[string]int{"n": i}})
		}
		// Data already encoded is stored as it is.
		recs = append(recs, outbox.Record{Type: "thing.created", AggregateID: "4", Data: outbox.Encoded(`{"n":4}`)})
		return outbox.AddMany(ctx, tx, "s", recs)
	})
	if err != nil {
		t.Fatal(err)
	}

	type row struct{ Stream, Type, AggregateID, Payload string }
	rows, err := d.Query(ctx, `SELECT stream, type, aggregate_id, payload::text FROM outbox WHERE published_at IS NULL ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	got, err := pgx.CollectRows(rows, pgx.RowToStructByPos[row])
	if err != nil {
		t.Fatal(err)
	}
	want := []row{
		{"s", "thing.added", "0", `{"n":0}`},
		{"s", "thing.created", "1", `{"n":1}`},
		{"s", "thing.created", "2", `{"n":2}`},
		{"s", "thing.created", "3", `{"n":3}`},
		{"s", "thing.created", "4", `{"n":4}`},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("outbox rows (-want +got):\n%s", diff)
	}
	// Elsewhere Encoded encodes as the JSON it holds, not as bytes.
	nested, err := json.Marshal(map[string]any{"data": outbox.Encoded(`{"n":4}`)})
	if err != nil || string(nested) != `{"data":{"n":4}}` {
		t.Errorf("Encoded in a value: %s, %v", nested, err)
	}
}

// TestRelayTrimsOldEvents: a stream keeps only events younger than the
// retention, so personal data in old events does not stay in Redis.
func TestRelayTrimsOldEvents(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := testdb.New(t, "outboxtest", outbox.Migrate, outbox.Migrations)
	rdb := newRedis(t)
	stream := randStream(t, rdb)
	old := time.Now().Add(-8 * 24 * time.Hour).UnixMilli()
	for i := range 3 {
		if err := rdb.XAdd(ctx, &redis.XAddArgs{Stream: stream, ID: fmt.Sprintf("%d-%d", old, i),
			Values: map[string]any{"event": "{}"}}).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.InTx(ctx, func(tx pgx.Tx) error {
		return outbox.Add(ctx, tx, stream, "thing.created", "1", map[string]int{"id": 1})
	}); err != nil {
		t.Fatal(err)
	}
	if n, err := (&outbox.Relay{DB: d, Redis: rdb}).Once(ctx); err != nil || n != 1 {
		t.Fatalf("Once = %d, %v", n, err)
	}
	entries, err := rdb.XRange(ctx, stream, "-", "+").Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].ID <= fmt.Sprintf("%d-9", old) {
		t.Errorf("stream holds %d entries (%v), want only the new event", len(entries), entries)
	}
}

// TestConsumeBatches: HandleBatch gets the events of a read together, in
// stream order; a failed batch stays pending and comes again whole, and
// nothing is acknowledged before it succeeds.
func TestConsumeBatches(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rdb := newRedis(t)
	stream := randStream(t, rdb)
	for i := 1; i <= 5; i++ {
		body := fmt.Sprintf(`{"id":%d,"type":"thing.created","aggregate_id":"%d","data":{}}`, i, i)
		if err := rdb.XAdd(ctx, &redis.XAddArgs{Stream: stream, Values: map[string]any{"event": body}}).Err(); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	var calls [][]int64
	failed := false
	c := &outbox.Consumer{Redis: rdb, Stream: stream, Group: "g", Name: "n", RetryIdle: 200 * time.Millisecond,
		HandleBatch: func(_ context.Context, evs []outbox.Event) error {
			mu.Lock()
			defer mu.Unlock()
			var ids []int64
			for _, ev := range evs {
				ids = append(ids, ev.ID)
			}
			calls = append(calls, ids)
			if !failed {
				failed = true
				return errors.New("store down")
			}
			return nil
		}}
	done := make(chan struct{})
	go func() { defer close(done); c.Run(ctx) }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		pending, err := rdb.XPending(ctx, stream, "g").Result()
		mu.Lock()
		n := len(calls)
		mu.Unlock()
		if err == nil && pending.Count == 0 && n >= 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 10 s: %d calls, pending %+v, %v", n, pending, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	<-done
	want := [][]int64{{1, 2, 3, 4, 5}, {1, 2, 3, 4, 5}}
	if diff := cmp.Diff(want, calls[:2]); diff != "" {
		t.Errorf("batches (-want +got):\n%s", diff)
	}
}

// xackCounter counts the XACK commands a client sends.
type xackCounter struct {
	mu sync.Mutex
	n  int
}

func (h *xackCounter) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *xackCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if cmd.Name() == "xack" {
			h.mu.Lock()
			h.n++
			h.mu.Unlock()
		}
		return next(ctx, cmd)
	}
}

func (h *xackCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// TestConsumerAcksOncePerRead: a consumer handling events one by one
// acknowledges a read's events with one XACK, handled, ignored (a type the
// handler does not follow) and undecodable alike; a failed one stays
// pending for its retry.
func TestConsumerAcksOncePerRead(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379"})
	t.Cleanup(func() { _ = rdb.Close() })
	acks := &xackCounter{}
	rdb.AddHook(acks)
	stream := randStream(t, rdb)
	ids := map[int64]string{}
	for i := int64(1); i <= 100; i++ {
		body := fmt.Sprintf(`{"id":%d,"type":"thing.created","aggregate_id":"%d","data":{}}`, i, i)
		if i == 50 {
			body = "not json"
		}
		id, err := rdb.XAdd(ctx, &redis.XAddArgs{Stream: stream, Values: map[string]any{"event": body}}).Result()
		if err != nil {
			t.Fatal(err)
		}
		ids[i] = id
	}
	var mu sync.Mutex
	seen := 0
	c := &outbox.Consumer{Redis: rdb, Stream: stream, Group: "g", Name: "n", RetryIdle: time.Hour,
		Handle: func(_ context.Context, ev outbox.Event) error {
			mu.Lock()
			defer mu.Unlock()
			seen++
			if ev.ID == 7 {
				return errors.New("store down")
			}
			return nil
		}}
	done := make(chan struct{})
	go func() { defer close(done); c.Run(ctx) }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		pending, err := rdb.XPending(ctx, stream, "g").Result()
		mu.Lock()
		n := seen
		mu.Unlock()
		if err == nil && n == 99 && pending.Count == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 10 s: %d handled, pending %+v, %v", n, pending, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	<-done
	pending, err := rdb.XPendingExt(context.Background(), &redis.XPendingExtArgs{Stream: stream, Group: "g", Start: "-", End: "+", Count: 10}).Result()
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, p := range pending {
		left = append(left, p.ID)
	}
	if diff := cmp.Diff([]string{ids[7]}, left); diff != "" {
		t.Errorf("pending after the read (-want +got):\n%s", diff)
	}
	acks.mu.Lock()
	defer acks.mu.Unlock()
	if acks.n != 1 {
		t.Errorf("%d XACK commands for one read of 100 events, want 1", acks.n)
	}
}

// TestAddManyCopiesABatch: a batch of events (sent as one COPY) is stored
// as a few (one INSERT) are: in order, each payload as encoded, the trace
// context and the schema version.
func TestAddManyCopiesABatch(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := testdb.New(t, "outboxtest", outbox.Migrate, outbox.Migrations)
	traced := tracing.Extract(ctx, tracing.Carrier{"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"})
	type row struct {
		Stream, Type, AggregateID, Payload string
		Trace                              *string
		Version                            int32
	}
	store := func(stream string, n int) []row {
		recs := make([]outbox.Record, n)
		for i := range recs {
			var data any = map[string]any{"n": i, "s": "<é>"}
			if i%2 == 1 {
				data = outbox.Encoded(fmt.Sprintf(`{"n":%d,"s":"\u003cé\u003e"}`, i))
			}
			recs[i] = outbox.Record{Type: "thing.created", AggregateID: fmt.Sprint(i), Data: data, SchemaVersion: i % 3}
		}
		if err := d.InTx(ctx, func(tx pgx.Tx) error { return outbox.AddMany(traced, tx, stream, recs) }); err != nil {
			t.Fatal(err)
		}
		rows, err := d.Query(ctx, `SELECT '', type, aggregate_id, payload::text, trace::text, schema_version FROM outbox
			WHERE stream = $1 ORDER BY id`, stream)
		if err != nil {
			t.Fatal(err)
		}
		got, err := pgx.CollectRows(rows, pgx.RowToStructByPos[row])
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	few := store("few", 3)
	many := store("many", 40)
	if diff := cmp.Diff(few, many[:3]); diff != "" {
		t.Errorf("the first 3 of a copied batch (-inserted +copied):\n%s", diff)
	}
	for i, r := range many {
		want := fmt.Sprintf(`{"n":%d,"s":"\u003cé\u003e"}`, i)
		if r.AggregateID != fmt.Sprint(i) || r.Payload != want || r.Trace == nil || r.Version != int32(max(i%3, 1)) {
			t.Errorf("row %d: %+v, want aggregate %d, payload %s, a trace, version %d", i, r, i, want, max(i%3, 1))
		}
	}
}
