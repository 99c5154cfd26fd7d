package store_test

import (
	"context"
	"io/fs"
	"testing"
	"testing/fstest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/opencrm/crm/pkg/db"
	"github.com/opencrm/crm/pkg/testdb"
	"github.com/opencrm/crm/services/webhooks/migrations"
)

// TestMigrationListsLatestAttempt: migration 004 gives every delivery
// attempted before it the one attempt on record (its latest), so the log's
// attempts end with what the delivery's own fields say; one never
// attempted lists none.
func TestMigrationListsLatestAttempt(t *testing.T) {
	t.Parallel()
	before := fstest.MapFS{}
	for _, name := range []string{"001_init.sql", "002_delivery_batches.sql", "003_batches_table.sql"} {
		b, err := fs.ReadFile(migrations.FS, name)
		if err != nil {
			t.Fatal(err)
		}
		before[name] = &fstest.MapFile{Data: b}
	}
	d := testdb.New(t, "webhooks", func(ctx context.Context, d *db.DB) error {
		for _, name := range []string{"001_init.sql", "002_delivery_batches.sql", "003_batches_table.sql"} {
			if _, err := d.Exec(ctx, string(before[name].Data)); err != nil {
				return err
			}
		}
		return nil
	}, before)
	ctx := context.Background()
	at := time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)
	if _, err := d.Exec(ctx, `INSERT INTO subscriptions (url, events, secret, secret_prefix) VALUES ('https://x.example/', '{*}', '\x01', 'whsec_x')`); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Exec(ctx, `INSERT INTO deliveries (id, subscription_id, event_type, record_key, status, attempt, status_code, duration_ms, error, response_body, last_attempt_at)
		OVERRIDING SYSTEM VALUE VALUES
			(1, 1, 'deal.created', 'deals:1', 'pending', 0, NULL, NULL, NULL, NULL, NULL),
			(2, 1, 'deal.created', 'deals:2', 'pending', 3, 500, 84, 'receiver answered 500', 'boom', $1),
			(3, 1, 'deal.created', 'deals:3', 'failed', 1, NULL, 2000, 'timeout', NULL, $1)`, at); err != nil {
		t.Fatal(err)
	}
	m, err := fs.ReadFile(migrations.FS, "004_delivery_attempts.sql")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Exec(ctx, string(m)); err != nil {
		t.Fatal(err)
	}
	type row struct {
		Delivery, Attempt int64
		Code              *int32
		Error, Body       *string
		Took              int32
		At                time.Time
	}
	rows, err := d.Query(ctx, `SELECT delivery_id, attempt, status_code, error, response_body, duration_ms, attempted_at
		FROM delivery_attempts ORDER BY delivery_id, attempt`)
	if err != nil {
		t.Fatal(err)
	}
	var got []row
	for rows.Next() {
		var r row
		if err := rows.Scan(&r.Delivery, &r.Attempt, &r.Code, &r.Error, &r.Body, &r.Took, &r.At); err != nil {
			t.Fatal(err)
		}
		r.At = r.At.UTC()
		got = append(got, r)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	code, e500, boom, timeout := int32(500), "receiver answered 500", "boom", "timeout"
	want := []row{
		{Delivery: 2, Attempt: 3, Code: &code, Error: &e500, Body: &boom, Took: 84, At: at},
		{Delivery: 3, Attempt: 1, Error: &timeout, Took: 2000, At: at},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("attempts after the migration (-want +got):\n%s", diff)
	}
}
