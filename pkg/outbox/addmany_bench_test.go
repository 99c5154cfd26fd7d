//go:build bench

package outbox

// AddMany's PostgreSQL CPU per event for batches of 100 events the size
// of a contact.created, sent as one INSERT … FROM unnest or as one COPY,
// in alternating rounds (each in its own transaction, as a batch write):
//
//	go test -tags bench -run '^$' -bench '^BenchmarkAddMany$' -benchtime 100x ./pkg/outbox/

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/opencrm/crm/pkg/proccpu"
	"github.com/opencrm/crm/pkg/testdb"
)

func BenchmarkAddMany(b *testing.B) {
	const size, rounds = 100, 6
	ctx := context.Background()
	d := testdb.New(b, "outboxbench", Migrate, Migrations)
	raw, _ := json.Marshal(map[string]any{"id": 1, "first_name": "Erp1", "last_name": "Customer1", "email": "batch1@bench.test",
		"phone": "+1 888 0000001", "status": "active", "source": "erp", "notes": strings.Repeat("n", 300),
		"custom_fields": map[string]any{"erp_id": "ERP-0000001", "erp_tier": "gold", "credit_limit": "1000.5", "customer_since": "2020-01-01"}})
	recs := make([]Record, size)
	for i := range recs {
		recs[i] = Record{Type: "contact.created", AggregateID: fmt.Sprint(i), Data: Encoded(raw)}
	}
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
	call := func() {
		if err := d.InTx(ctx, func(tx pgx.Tx) error { return AddMany(ctx, tx, "s", recs) }); err != nil {
			b.Fatal(err)
		}
	}
	defer func(m int) { copyMin = m }(copyMin)
	modes := []struct {
		name string
		min  int
	}{{"INSERT", size + 1}, {"COPY", size}}
	for _, m := range modes { // warm both statements
		copyMin = m.min
		call()
	}
	pg, wall := make([]time.Duration, len(modes)), make([]time.Duration, len(modes))
	b.ResetTimer()
	for range rounds {
		for i, m := range modes {
			copyMin = m.min
			pg0, t0 := backends(), time.Now()
			for range b.N {
				call()
			}
			pg[i] += backends() - pg0
			wall[i] += time.Since(t0)
		}
	}
	b.StopTimer()
	events := float64(rounds * b.N * size)
	for i, m := range modes {
		fmt.Printf("%s: PostgreSQL CPU %.1f µs/event, wall %.1f µs/event\n", m.name,
			float64(pg[i].Microseconds())/events, float64(wall[i].Microseconds())/events)
	}
	fmt.Printf("COPY / INSERT: PostgreSQL CPU %.2f, wall %.2f; load average %s\n",
		float64(pg[1])/float64(pg[0]), float64(wall[1])/float64(wall[0]), proccpu.LoadAvg())
}
