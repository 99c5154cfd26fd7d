package store_test

import (
	"context"
	"io/fs"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"

	"github.com/opencrm/crm/pkg/db"
	"github.com/opencrm/crm/pkg/testdb"
	"github.com/opencrm/crm/services/webhooks/migrations"
)

// TestMigrationMovesBatchesInFlight: migration 003 turns what an earlier
// version had in flight (deliveries marked queued, in a batch or as a
// ping) into batch rows that keep their ids, order and attempts, so the
// tasks already in Redis still find their work after the upgrade.
func TestMigrationMovesBatchesInFlight(t *testing.T) {
	t.Parallel()
	sql := func(name string) string {
		b, err := fs.ReadFile(migrations.FS, name)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	before := fstest.MapFS{"001.sql": {Data: []byte(sql("001_init.sql"))}, "002.sql": {Data: []byte(sql("002_delivery_batches.sql"))}}
	d := testdb.New(t, "webhooks", func(ctx context.Context, d *db.DB) error {
		for _, f := range []string{"001.sql", "002.sql"} {
			if _, err := d.Exec(ctx, string(before[f].Data)); err != nil {
				return err
			}
		}
		return nil
	}, before)
	ctx := context.Background()
	if _, err := d.Exec(ctx, `
		INSERT INTO subscriptions (url, events, secret, secret_prefix) VALUES ('https://x.example/', '{*}', '\x01', 'whsec_x');
		INSERT INTO deliveries (id, subscription_id, event_type, record_key, status, queued, queued_at, queued_batch, attempt, next_attempt_at)
		OVERRIDING SYSTEM VALUE VALUES
			(1, 1, 'deal.created', 'deals:1', 'pending', true, now(), 7, 0, now() - interval '2 minutes'),
			(2, 1, 'deal.created', 'deals:2', 'pending', true, now(), 7, 2, now() - interval '3 minutes'),
			(3, 1, 'deal.created', 'deals:3', 'pending', false, NULL, NULL, 0, now()),
			(4, 1, 'ping', 'ping:1', 'pending', true, now(), NULL, 0, now()),
			(5, 1, 'deal.created', 'deals:5', 'delivered', false, NULL, NULL, 1, now())`); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Exec(ctx, sql("003_batches_table.sql")); err != nil {
		t.Fatal(err)
	}
	type batch struct {
		ID, Sub    int64
		Deliveries []int64
		Attempts   []int32
	}
	rows, err := d.Query(ctx, `SELECT id, subscription_id, deliveries, attempts FROM batches ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	var got []batch
	for rows.Next() {
		var b batch
		if err := rows.Scan(&b.ID, &b.Sub, &b.Deliveries, &b.Attempts); err != nil {
			t.Fatal(err)
		}
		got = append(got, b)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	want := []batch{
		{ID: -4, Sub: 1, Deliveries: []int64{4}, Attempts: []int32{0}}, // the ping, a batch of its own
		{ID: 7, Sub: 1, Deliveries: []int64{2, 1}, Attempts: []int32{2, 0}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("batches after the migration (-want +got):\n%s", diff)
	}
}
