package store_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/opencrm/crm/pkg/db"
	"github.com/opencrm/crm/pkg/testdb"
	"github.com/opencrm/crm/services/leads/migrations"
)

// searchShape is what defines lead_search: its columns, storage options
// and indexes, and the functions and triggers that keep it, as the
// catalog prints them.
func searchShape(t *testing.T, d *db.DB) []string {
	t.Helper()
	return testdb.Column[string](t, d, `
		SELECT 'column ' || attname || ' ' || format_type(atttypid, atttypmod) || CASE WHEN attnotnull THEN ' not null' ELSE '' END
		FROM pg_attribute WHERE attrelid = 'lead_search'::regclass AND attnum > 0 AND NOT attisdropped
		UNION ALL SELECT 'options ' || coalesce(array_to_string(reloptions, ','), '') FROM pg_class WHERE oid = 'lead_search'::regclass
		UNION ALL SELECT pg_get_indexdef(indexrelid) FROM pg_index WHERE indrelid IN ('lead_search'::regclass, 'leads'::regclass)
		UNION ALL SELECT pg_get_triggerdef(oid) FROM pg_trigger WHERE tgrelid = 'leads'::regclass AND tgname LIKE 'leads_search%'
		UNION ALL SELECT proname || ': ' || prosrc FROM pg_proc WHERE proname LIKE 'lead_search%'
		ORDER BY 1`)
}

// TestSearchTextOnlyMigration: 013's down part restores 011's projection
// exactly (the shape 011's own up part builds, filled from leads and
// following writes), and its up part brings back the (id, search_text)
// projection, filled and following writes.
func TestSearchTextOnlyMigration(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d, _ := newStore(t)
	follows := func(step, cols string) {
		t.Helper()
		testdb.Apply(t, d, step+": write", `UPDATE leads SET last_name = last_name || 'x', status = 'contacted' WHERE id % 3 = 0`)
		var diff int
		if err := d.QueryRow(ctx, `SELECT count(*) FROM ((SELECT `+cols+` FROM leads EXCEPT ALL SELECT `+cols+` FROM lead_search)
			UNION ALL (SELECT `+cols+` FROM lead_search EXCEPT ALL SELECT `+cols+` FROM leads)) d`).Scan(&diff); err != nil {
			t.Fatal(err)
		}
		if diff != 0 {
			t.Errorf("%s: %d rows of lead_search differ from leads", step, diff)
		}
	}
	testdb.Apply(t, d, "seed", `INSERT INTO leads (first_name, last_name, email, company, status, source, enums, custom_fields)
		SELECT 'P' || g, 'Smith', 'p' || g || '@x.example', 'Acme', 'new', 'web', '{"tier": "gold"}', '{"tier": "gold"}'
		FROM generate_series(1, 30) g`)
	const cols011 = `id, first_name, last_name, email, company, source, status, assigned_to, assigned_to_name,
		created_at, updated_at, enums, search_text`
	up013, down013 := testdb.Sections(t, migrations.FS, "013_search_text_only.sql")
	up011, down011 := testdb.Sections(t, migrations.FS, "011_search_projection.sql")

	testdb.Apply(t, d, "013 down", down013)
	restored := searchShape(t, d)
	follows("013 down", cols011)
	testdb.Apply(t, d, "011 down", down011)
	testdb.Apply(t, d, "011 up", up011)
	if diff := cmp.Diff(searchShape(t, d), restored); diff != "" {
		t.Errorf("013 down differs from 011 (-011 +013 down):\n%s", diff)
	}
	follows("011 up", cols011)

	testdb.Apply(t, d, "013 up", up013)
	follows("013 up", "id, search_text")
	var n int
	if err := d.QueryRow(ctx, `SELECT count(*) FROM lead_search`).Scan(&n); err != nil || n != 30 {
		t.Errorf("013 up: %d rows in lead_search (%v), want 30", n, err)
	}
}
