package store

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/opencrm/crm/pkg/db"
	"github.com/opencrm/crm/pkg/testdb"
	"github.com/opencrm/crm/services/contacts/migrations"
)

// searchShape is what defines contact_search: its columns, storage
// options and indexes (contacts' too, where the trigram index lived), and
// the functions and triggers that keep it, as the catalog prints them.
func searchShape(t *testing.T, d *db.DB) []string {
	t.Helper()
	return testdb.Column[string](t, d, `
		SELECT 'column ' || attname || ' ' || format_type(atttypid, atttypmod) || CASE WHEN attnotnull THEN ' not null' ELSE '' END
		FROM pg_attribute WHERE attrelid = 'contact_search'::regclass AND attnum > 0 AND NOT attisdropped
		UNION ALL SELECT 'options ' || coalesce(array_to_string(reloptions, ','), '') FROM pg_class WHERE oid = 'contact_search'::regclass
		UNION ALL SELECT pg_get_indexdef(indexrelid) FROM pg_index WHERE indrelid IN ('contact_search'::regclass, 'contacts'::regclass)
		UNION ALL SELECT pg_get_triggerdef(oid) FROM pg_trigger WHERE tgrelid = 'contacts'::regclass AND tgname LIKE 'contacts_search%'
		UNION ALL SELECT proname || ': ' || prosrc FROM pg_proc WHERE proname LIKE 'contact_search%'
		ORDER BY 1`)
}

// TestSearchTextOnlyMigration: 017's down part restores 016's projection
// exactly (the shape 016's own up part builds, filled from contacts and
// following writes), and its up part brings back the (id, company_id,
// search_text) projection, filled and following writes.
func TestSearchTextOnlyMigration(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d, _ := newTestStore(t)
	follows := func(step, cols string) {
		t.Helper()
		testdb.Apply(t, d, step+": write", `UPDATE contacts SET last_name = last_name || 'x', status = 'inactive',
			company_id = (SELECT max(id) FROM companies) WHERE id % 3 = 0`)
		var diff int
		if err := d.QueryRow(ctx, `SELECT count(*) FROM ((SELECT `+cols+` FROM contacts EXCEPT ALL SELECT `+cols+` FROM contact_search)
			UNION ALL (SELECT `+cols+` FROM contact_search EXCEPT ALL SELECT `+cols+` FROM contacts)) d`).Scan(&diff); err != nil {
			t.Fatal(err)
		}
		if diff != 0 {
			t.Errorf("%s: %d rows of contact_search differ from contacts", step, diff)
		}
	}
	testdb.Apply(t, d, "seed", `INSERT INTO companies (name) VALUES ('Acme'), ('Beta')`)
	testdb.Apply(t, d, "seed", `INSERT INTO contacts (first_name, last_name, email, status, source, company_id, custom_fields)
		SELECT 'P' || g, 'Smith', 'p' || g || '@x.example', 'active', 'web', (SELECT min(id) FROM companies), '{}'
		FROM generate_series(1, 30) g`)
	const cols016 = `id, company_id, assigned_to, created_at, updated_at, status, source, sort_name, email, phone,
		company_name, enums, search_text`
	up017, down017 := testdb.Sections(t, migrations.FS, "017_search_text_only.sql")
	up016, down016 := testdb.Sections(t, migrations.FS, "016_search_projection.sql")

	testdb.Apply(t, d, "017 down", down017)
	restored := searchShape(t, d)
	follows("017 down", cols016)
	testdb.Apply(t, d, "016 down", down016)
	testdb.Apply(t, d, "016 up", up016)
	if diff := cmp.Diff(searchShape(t, d), restored); diff != "" {
		t.Errorf("017 down differs from 016 (-016 +017 down):\n%s", diff)
	}
	follows("016 up", cols016)

	testdb.Apply(t, d, "017 up", up017)
	follows("017 up", "id, company_id, search_text")
	var n int
	if err := d.QueryRow(ctx, `SELECT count(*) FROM contact_search`).Scan(&n); err != nil || n != 30 {
		t.Errorf("017 up: %d rows in contact_search (%v), want 30", n, err)
	}
}
