package history_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/opencrm/crm/pkg/history"
	"github.com/opencrm/crm/pkg/testdb"
)

// TestRedactKeepsIdsAndTimes: an erased record's entries keep who, when,
// ids and timestamps, every other value reads "[erased]"; another
// record's entries are untouched, and a second run changes nothing.
func TestRedactKeepsIdsAndTimes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := testdb.New(t, "histredact", migrate, history.Migrations)
	var erased, kept int64
	if err := d.QueryRow(ctx, `INSERT INTO things (name, owner, custom_fields) VALUES ('Ann', 3, '{"tier": "gold"}') RETURNING id`).Scan(&erased); err != nil {
		t.Fatal(err)
	}
	if err := d.QueryRow(ctx, `INSERT INTO things (name) VALUES ('Bob') RETURNING id`).Scan(&kept); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Exec(ctx, `UPDATE things SET name = 'Ann Lee', status = NULL WHERE id = $1`, erased); err != nil {
		t.Fatal(err)
	}

	n, err := history.Redact(ctx, d, "thing", []int64{erased})
	if err != nil || n != 2 {
		t.Fatalf("redacted %d entries, %v; want 2", n, err)
	}
	if n, err := history.Redact(ctx, d, "thing", []int64{erased}); err != nil || n != 0 {
		t.Errorf("a second run redacted %d entries, %v; want 0", n, err)
	}

	var got []string
	if err := d.QueryRow(ctx, `SELECT array_agg(coalesce(before::text, '') || ' → ' || (after - 'created_at' - 'updated_at')::text ORDER BY id)
		FROM history WHERE record_id = $1`, erased).Scan(&got); err != nil {
		t.Fatal(err)
	}
	want := []string{
		` → {"name": "[erased]", "owner": "[erased]", "custom_fields": "[erased]"}`,
		`{"name": "[erased]"} → {"name": "[erased]"}`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("erased record's history (-want +got):\n%s", diff)
	}
	// The reader lists a custom_fields redacted as a whole as one change.
	entries, _, err := history.List(ctx, d, "thing", erased, history.Query{PerPage: 10})
	if err != nil {
		t.Fatalf("reading the redacted history: %v", err)
	}
	var created []change
	for _, e := range entries {
		if e.Action == "created" {
			created = changes(e)
		}
	}
	wantCreated := []change{{"custom_fields", "null", `"[erased]"`}, {"name", "null", `"[erased]"`}, {"owner", "null", `"[erased]"`}}
	if diff := cmp.Diff(wantCreated, created); diff != "" {
		t.Errorf("the create's changes after redaction (-want +got):\n%s", diff)
	}
	var name string
	if err := d.QueryRow(ctx, `SELECT after->>'name' FROM history WHERE record_id = $1`, kept).Scan(&name); err != nil || name != "Bob" {
		t.Errorf("another record's history: name %q, %v", name, err)
	}
}
