//go:build bench

package outbox_test

// The relay's CPU per event, in this process (Go) and in its PostgreSQL
// backends, for events the size of a contact.created (about 900 bytes):
//
//	CRM_BENCH_REDIS=redis://127.0.0.1:6379/12 go test -tags bench -run '^$' -bench '^BenchmarkRelay$' -benchtime 20000x ./pkg/outbox/

import (
	"context"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"

	"github.com/opencrm/crm/pkg/outbox"
	"github.com/opencrm/crm/pkg/proccpu"
	"github.com/opencrm/crm/pkg/testdb"
)

func BenchmarkRelay(b *testing.B) {
	ctx := context.Background()
	d := testdb.New(b, "outboxbench", outbox.Migrate, outbox.Migrations)
	url := os.Getenv("CRM_BENCH_REDIS")
	if url == "" {
		url = "redis://127.0.0.1:6379/0"
	}
	opt, err := redis.ParseURL(url)
	if err != nil {
		b.Fatal(err)
	}
	rdb := redis.NewClient(opt)
	b.Cleanup(func() { _ = rdb.Close() })
	stream := fmt.Sprintf("bench:events:%d", time.Now().UnixNano())
	b.Cleanup(func() { rdb.Del(context.Background(), stream) })
	data := map[string]any{"id": 1, "first_name": "Erp1", "last_name": "Customer1", "email": "batch1@bench.test",
		"phone": "+1 888 0000001", "status": "active", "source": "erp", "notes": strings.Repeat("n", 300),
		"custom_fields": map[string]any{"erp_id": "ERP-0000001", "erp_tier": "gold", "credit_limit": "1000.5", "customer_since": "2020-01-01"},
		"created_at":    "2026-11-28T01:00:00.000000Z", "updated_at": "2026-11-28T01:00:00.000000Z"}
	for done := 0; done < b.N; done += 100 {
		recs := make([]outbox.Record, min(100, b.N-done))
		for i := range recs {
			recs[i] = outbox.Record{Type: "contact.created", AggregateID: fmt.Sprint(done + i), Data: data}
		}
		if err := d.InTx(ctx, func(tx pgx.Tx) error { return outbox.AddMany(ctx, tx, stream, recs) }); err != nil {
			b.Fatal(err)
		}
	}
	relay := &outbox.Relay{DB: d, Redis: rdb}
	backends := func() time.Duration {
		rows, err := d.Query(ctx, `SELECT pid FROM pg_stat_activity WHERE datname = current_database()`)
		if err != nil {
			b.Fatal(err)
		}
		pids, err := pgx.CollectRows(rows, pgx.RowTo[int32])
		if err != nil {
			b.Fatal(err)
		}
		return proccpu.Sum(pids)
	}
	self := func() time.Duration {
		var ru syscall.Rusage
		_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	pg0, go0 := backends(), self()
	b.ResetTimer()
	relayed := 0
	for relayed < b.N {
		n, err := relay.Once(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if n == 0 {
			b.Fatalf("relayed %d of %d", relayed, b.N)
		}
		relayed += n
	}
	b.StopTimer()
	us := func(t time.Duration) float64 { return float64(t.Microseconds()) / float64(b.N) }
	fmt.Printf("relay of %d events: Go CPU %.1f µs/event, PostgreSQL CPU %.1f µs/event; load average %s\n",
		b.N, us(self()-go0), us(backends()-pg0), proccpu.LoadAvg())
}
