package store

import (
	"context"
	"log/slog"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/opencrm/crm/pkg/list"
	"github.com/opencrm/crm/pkg/testdb"
	"github.com/opencrm/crm/services/contacts/internal/contacts"
)

// TestSearchCopyFollowsContacts: contact_search (migration 010) holds
// exactly each contact's copied columns after inserts, updates of every
// copied column, a company rename, deletes and a truncate; and a search
// read from it returns the page and total of the same search over
// contacts, with filters, for every sort key in both directions.
func TestSearchCopyFollowsContacts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := testdb.New(t, Schema, Migrate, MigrationSets...)
	s := &Store{db: d, log: slog.Default()}
	exec := func(sql string) {
		t.Helper()
		if _, err := d.Exec(ctx, sql); err != nil {
			t.Fatalf("%v\n%s", err, sql)
		}
	}
	const cols = `id, search_text, sort_name, email, phone, company_name, company_id, status, source, assigned_to, created_at, updated_at`
	same := func(stage string) {
		t.Helper()
		var missing, stale int
		if err := d.QueryRow(ctx, `SELECT (SELECT count(*) FROM (SELECT `+cols+` FROM contacts EXCEPT SELECT `+cols+` FROM contact_search) a),
			(SELECT count(*) FROM (SELECT `+cols+` FROM contact_search EXCEPT SELECT `+cols+` FROM contacts) b)`).Scan(&missing, &stale); err != nil {
			t.Fatal(err)
		}
		if missing != 0 || stale != 0 {
			t.Errorf("%s: %d contacts missing from contact_search, %d copies stale", stage, missing, stale)
		}
	}
	exec(`INSERT INTO directory_users (id, name, email, role, team_id, active, updated_at) VALUES
		(7, 'A', 'a@x.example', 'user', 70, true, now()), (8, 'B', 'b@x.example', 'user', 70, true, now())`)
	exec(`INSERT INTO companies (name) SELECT 'Acme ' || g FROM generate_series(1, 5) g`)
	exec(`INSERT INTO contacts (first_name, last_name, email, phone, company_id, status, source, assigned_to, created_at)
		SELECT 'F' || g, (ARRAY['Smith', 'Jones', 'Smithers'])[1 + g % 3], CASE WHEN g % 4 = 0 THEN NULL ELSE 'u' || g || '@m.example' END,
			CASE WHEN g % 5 = 0 THEN NULL ELSE '+1 555 ' || (g % 37) END, CASE WHEN g % 6 = 0 THEN NULL ELSE 1 + g % 5 END,
			CASE WHEN g % 3 = 0 THEN 'inactive' ELSE 'active' END, (ARRAY['web', 'event', NULL])[1 + g % 3],
			(ARRAY[7, 8, NULL]::bigint[])[1 + g % 3], timestamptz '2026-01-01 00:00:00Z' + g * interval '5 hours'
		FROM generate_series(1, 600) g`)
	same("inserted")
	exec(`UPDATE contacts SET last_name = 'Smith', status = 'inactive', source = 'partner', assigned_to = 8 WHERE id % 7 = 0`)
	exec(`UPDATE contacts SET email = NULL, phone = '+1 999', company_id = 2, created_at = created_at - interval '3 days' WHERE id % 11 = 0`)
	exec(`UPDATE contacts SET notes = 'no copied column changes' WHERE id % 13 = 0`)
	exec(`UPDATE companies SET name = 'Smith & Co' WHERE id = 3`)
	exec(`DELETE FROM contacts WHERE id % 17 = 0`)
	created, err := s.CreateContact(ctx, contacts.Contact{FirstName: "Ann", LastName: "Smith", Status: contacts.StatusActive})
	if err != nil {
		t.Fatal(err)
	}
	same("updated")

	// Searches with filters and every sort key, both directions, against
	// the same statement over contacts.
	for _, search := range []contacts.Filter{
		{Query: list.Query{Search: "smith"}},
		{Query: list.Query{Search: "SMITH"}, Status: contacts.StatusActive},
		{Query: list.Query{Search: "smith", Scope: list.ScopeMe}, Caller: 8},
		{Query: list.Query{Search: "m.example"}, Source: "web", CompanyID: ptr(int64(2))},
		{Query: list.Query{Search: "555"}, AssignedTo: ptr(int64(7))},
	} {
		for key := range contactSorts.By {
			for _, desc := range []bool{false, true} {
				for _, page := range []int{1, 3} {
					f := search
					f.Query.SortBy, f.Query.Desc, f.Query.Page, f.Query.PerPage = key, desc, page, 7
					got, total, err := s.ListContacts(ctx, f)
					if err != nil {
						t.Fatal(err)
					}
					w := filter(f)
					var want, wantTotal []int64
					rows, err := d.Query(ctx, `SELECT id, count(*) OVER () FROM contacts `+w.SQL()+` `+sorts(f).OrderBy(f.Query), w.Args()...)
					if err != nil {
						t.Fatal(err)
					}
					for rows.Next() {
						var id, n int64
						if err := rows.Scan(&id, &n); err != nil {
							t.Fatal(err)
						}
						want = append(want, id)
						wantTotal = []int64{n}
					}
					if err := rows.Err(); err != nil {
						t.Fatal(err)
					}
					start, end := min((page-1)*7, len(want)), min(page*7, len(want))
					var ids []int64
					for _, c := range got {
						ids = append(ids, c.ID)
					}
					if diff := cmp.Diff(want[start:end], ids, cmpopts.EquateEmpty()); diff != "" {
						t.Errorf("%+v: page (-want +got):\n%s", f, diff)
					}
					if len(wantTotal) == 0 {
						wantTotal = []int64{0}
					}
					if int64(total) != wantTotal[0] {
						t.Errorf("%+v: total %d, want %d", f, total, wantTotal[0])
					}
				}
			}
		}
	}
	if _, total, err := s.ListContacts(ctx, contacts.Filter{Query: list.Query{Search: "ann", Page: 1, PerPage: 5, SortBy: contacts.DefaultSort}}); err != nil || total != 1 {
		t.Errorf("search for the contact created through the store (%d): total %d, %v", created.ID, total, err)
	}

	exec(`TRUNCATE contacts CASCADE`)
	same("truncated")
}
