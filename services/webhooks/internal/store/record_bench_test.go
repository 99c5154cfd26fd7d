package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/opencrm/crm/pkg/db"
	"github.com/opencrm/crm/pkg/testdb"
	"github.com/opencrm/crm/services/webhooks/internal/store"
	"github.com/opencrm/crm/services/webhooks/migrations"
)

// BenchmarkRecordBatch times the engine's outcome path alone: recording a
// batch of 100 delivered attempts (a 204 and a short body each), the
// statement that updates the deliveries and logs their attempts. Handing
// out each batch (Dispatch) is not timed.
func BenchmarkRecordBatch(b *testing.B) {
	const size = 100
	d := testdb.New(b, "webhooks", func(ctx context.Context, d *db.DB) error {
		return db.Migrate(ctx, d, "webhooks", migrations.FS)
	}, migrations.FS)
	st, err := store.New(d)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	if _, err := d.Exec(ctx, `INSERT INTO subscriptions (url, events, secret, secret_prefix)
		VALUES ('https://x.example/', '{*}', '\x01', 'whsec_')`); err != nil {
		b.Fatal(err)
	}
	if _, err := d.Exec(ctx, `INSERT INTO deliveries (subscription_id, event_type, record_key, next_attempt_at)
		SELECT 1, 'deal.created', 'deals:' || n, now() - interval '1 hour' + n * interval '1 microsecond'
		FROM generate_series(1, $1::int) n`, b.N*size); err != nil {
		b.Fatal(err)
	}
	if _, err := d.Exec(ctx, `ANALYZE deliveries`); err != nil {
		b.Fatal(err)
	}
	code, body := 204, "ok"
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		bs, err := st.Dispatch(ctx, 1, size)
		if err != nil || len(bs) != 1 || len(bs[0].Tasks) != size {
			b.Fatalf("dispatch: %v, %v", bs, err)
		}
		rs := make([]store.Result, size)
		for i, t := range bs[0].Tasks {
			rs[i] = store.Result{Task: t, Tried: true, Outcome: store.Outcome{
				Status: "delivered", StatusCode: &code, DurationMS: 3, Body: &body, At: time.Now(),
			}}
		}
		b.StartTimer()
		applied, err := st.RecordBatch(ctx, bs[0].ID, rs)
		if err != nil || len(applied) != size {
			b.Fatalf("record: %d applied, %v", len(applied), err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*size), "µs/delivery")
}
