package store_test

import (
	"context"
	"testing"
)

// TestCounterStaysExact: the unfiltered total (sum of per-statement deltas)
// equals count(*) across inserts, deletes and compactions.
func TestCounterStaysExact(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d, st := newStore(t)
	check := func(step string) {
		t.Helper()
		var sum, count int
		if err := d.QueryRow(ctx, `SELECT (SELECT coalesce(sum(n), 0) FROM lead_count_deltas), (SELECT count(*) FROM leads)`).Scan(&sum, &count); err != nil {
			t.Fatal(err)
		}
		if sum != count {
			t.Fatalf("%s: counter %d, count(*) %d", step, sum, count)
		}
	}
	insert := func(n int) {
		t.Helper()
		if _, err := d.Exec(ctx, `INSERT INTO leads (first_name, last_name) SELECT 'A', 'B' || g FROM generate_series(1, $1) g`, n); err != nil {
			t.Fatal(err)
		}
	}
	insert(3)
	insert(2)
	check("after inserts")
	if _, err := d.Exec(ctx, `DELETE FROM leads WHERE id = (SELECT min(id) FROM leads)`); err != nil {
		t.Fatal(err)
	}
	check("after delete")
	if err := st.CompactCounts(ctx); err != nil {
		t.Fatal(err)
	}
	check("after compaction")
	var rows int
	if err := d.QueryRow(ctx, `SELECT count(*) FROM lead_count_deltas`).Scan(&rows); err != nil || rows != 1 {
		t.Fatalf("deltas after compaction: %d rows, %v", rows, err)
	}
	insert(4)
	check("after compaction and insert")
}
