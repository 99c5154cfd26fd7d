package store_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"

	"github.com/opencrm/crm/pkg/contract/propertyapi"
	"github.com/opencrm/crm/pkg/customfield"
	"github.com/opencrm/crm/pkg/db"
	"github.com/opencrm/crm/pkg/list"
	"github.com/opencrm/crm/services/leads/internal/leads"
	"github.com/opencrm/crm/services/leads/internal/store"
)

// TestCubeTotalsEqualCount: after every kind of write the store does
// (create, batch create, import, updates of status, source, owner, enum
// values and created_at, disqualification, deletion, an assignee rename,
// a custom field's deletion), the list's total of every combination of
// the cube's filters and date ranges equals count(*) of the same filter,
// and so do the totals of filters the cube does not answer; the same
// after compaction, and after writes on top of the compacted cube.
func TestCubeTotalsEqualCount(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d, st := newStore(t)
	// Users 1 and 2 share team 10, 3 is alone in team 20, 4 has no team.
	if _, err := d.Exec(ctx, `INSERT INTO directory_users (id, name, email, role, team_id, active, updated_at)
		VALUES (1, 'Ann', 'ann@example.com', 'sales_rep', 10, true, now()), (2, 'Bob', 'bob@example.com', 'sales_rep', 10, true, now()),
			(3, 'Cy', 'cy@example.com', 'sales_rep', 20, true, now()), (4, 'Di', 'di@example.com', 'sales_rep', NULL, true, now())`); err != nil {
		t.Fatal(err)
	}
	props := customfield.Store{DB: d, Stream: leads.Stream}
	enum := func(name string, values ...string) propertyapi.PropertyInput {
		in := propertyapi.PropertyInput{Name: name, Label: name, Type: customfield.Enum}
		for _, v := range values {
			in.Options = append(in.Options, propertyapi.Option{Value: v, Label: v})
		}
		return in
	}
	for _, in := range []propertyapi.PropertyInput{enum("tier", "gold", "silver", "bronze"), enum("region", "north", "south"),
		enum("gone", "x", "y"), {Name: "note", Label: "Note", Type: customfield.Text}} {
		if _, err := props.Create(ctx, leads.Object, in); err != nil {
			t.Fatal(err)
		}
	}
	defs, err := st.Definitions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	def := map[string]customfield.Definition{}
	for _, d := range defs {
		def[d.Name] = d
	}

	rnd := rand.New(rand.NewPCG(1, 2))
	pick := func(opts ...string) string { return opts[rnd.IntN(len(opts))] }
	statuses := []string{leads.StatusNew, leads.StatusContacted, leads.StatusQualified, leads.StatusDisqualified}
	source := func() *string {
		if s := pick("", "Web", "web", "Referral"); s != "" {
			return &s
		}
		return nil
	}
	owner := func() *int64 {
		if id := int64(rnd.IntN(5)); id > 0 {
			return &id
		}
		return nil
	}
	gone := false // whether the field "gone" was deleted
	customs := func() map[string]any {
		c := map[string]any{}
		for name, values := range map[string][]string{"tier": {"gold", "silver", "bronze"}, "region": {"north", "south"}, "gone": {"x", "y"}} {
			if rnd.IntN(3) > 0 && !(gone && name == "gone") {
				c[name] = values[rnd.IntN(len(values))]
			}
		}
		if rnd.IntN(2) == 0 {
			c["note"] = pick("a", "b")
		}
		return c
	}
	lead := func(i int) leads.Lead {
		return leads.Lead{FirstName: "F", LastName: fmt.Sprint("L", i), Status: statuses[rnd.IntN(len(statuses))],
			Source: source(), AssignedTo: owner(), CustomFields: customs()}
	}
	create := func(n int) {
		t.Helper()
		for i := range n {
			if _, err := st.Create(ctx, lead(i)); err != nil {
				t.Fatal(err)
			}
		}
	}
	exec := func(sql string, args ...any) {
		t.Helper()
		if _, err := d.Exec(ctx, sql, args...); err != nil {
			t.Fatal(err)
		}
	}
	ids := func() []int64 {
		t.Helper()
		var ids []int64
		rows, err := d.Query(ctx, `SELECT id FROM leads ORDER BY id`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		for rows.Next() {
			var id int64
			if err := rows.Scan(&id); err != nil {
				t.Fatal(err)
			}
			ids = append(ids, id)
		}
		return ids
	}

	create(60)
	batch := make([]leads.Lead, 30)
	keys := make([]string, len(batch))
	for i := range batch {
		batch[i], keys[i] = lead(i), fmt.Sprint("cube-batch-", i)
	}
	if _, err := st.CreateManyOnce(ctx, keys, batch); err != nil {
		t.Fatal(err)
	}
	row := 0
	if _, err := st.Import(ctx, func() (store.ImportRow, bool, error) {
		if row++; row > 20 {
			return store.ImportRow{}, false, nil
		}
		l := lead(row)
		l.AssignedTo = nil // an import assigns nobody
		return store.ImportRow{Row: row + 1, Lead: l}, true, nil
	}, store.ImportOptions{MaxSkips: 10, Definitions: defs}); err != nil {
		t.Fatal(err)
	}
	// Creation days over four months, at every minute of the day, so day
	// and month edges fall between leads.
	exec(`UPDATE leads SET created_at = timestamptz '2026-01-20 00:00:00+00' + (id % 100) * interval '1 day' + (id * 7 % 1440) * interval '1 minute'`)
	create(10) // today
	for _, id := range ids()[:40] {
		if _, err := st.Update(ctx, id, func(l *leads.Lead) error {
			switch id % 4 {
			case 0:
				l.Status = statuses[rnd.IntN(len(statuses))]
			case 1:
				l.Source = source()
			case 2:
				l.AssignedTo = owner()
			case 3:
				if l.CustomFields == nil {
					l.CustomFields = map[string]any{}
				}
				if v := pick("", "gold", "silver"); v != "" {
					l.CustomFields["tier"] = v
				} else {
					delete(l.CustomFields, "tier")
				}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	all := ids()
	for _, id := range all[40:45] {
		if _, err := st.Disqualify(ctx, id, nil); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range all[45:55] {
		if err := st.Delete(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	if err := props.Delete(ctx, leads.Object, "gone"); err != nil {
		t.Fatal(err)
	}
	gone = true
	exec(`UPDATE leads SET created_at = timestamptz '2026-02-28 23:59:59+00' WHERE id = $1`, all[60])
	exec(`UPDATE directory_users SET name = 'Ann B' WHERE id = 1`)
	if _, err := st.RefreshAssigneeNames(ctx, nil); err != nil {
		t.Fatal(err)
	}

	checkCube(t, d, st, def, "after writes")
	if err := st.CompactCounts(ctx); err != nil {
		t.Fatal(err)
	}
	var rows, keysN int
	if err := d.QueryRow(ctx, `SELECT count(*), count(DISTINCT (grain, period, status, source, assigned_to, enums)) FROM lead_cube`).Scan(&rows, &keysN); err != nil {
		t.Fatal(err)
	}
	if rows != keysN {
		t.Errorf("after compaction: %d cube rows for %d keys", rows, keysN)
	}
	checkCube(t, d, st, def, "after compaction")

	create(5)
	exec(`UPDATE leads SET status = 'contacted', assigned_to = 3 WHERE id = ANY($1)`, all[20:30])
	exec(`DELETE FROM leads WHERE id = ANY($1)`, all[30:35])
	checkCube(t, d, st, def, "after writes on the compacted cube")
}

// checkCube compares the cube with the leads it counts, then the list's
// totals with count(*).
func checkCube(t *testing.T, d *db.DB, st *store.Store, def map[string]customfield.Definition, step string) {
	t.Helper()
	ctx := context.Background()
	// Every key's sum is the number of leads it describes, and no key
	// without leads sums to anything else than zero.
	var wrong int
	if err := d.QueryRow(ctx, `WITH keyed AS (
			SELECT status, coalesce(source, '') AS source, coalesce(assigned_to, 0) AS assigned_to,
				custom_field_enums('leads', custom_fields) AS enums, (created_at AT TIME ZONE 'UTC')::date AS day FROM leads),
		want AS (
			SELECT g.grain, g.period, k.status, k.source, k.assigned_to, k.enums, count(*) AS n FROM keyed k,
				LATERAL (VALUES ('a'::"char", '-infinity'::date), ('m', date_trunc('month', k.day)::date), ('d', k.day)) g (grain, period)
			GROUP BY 1, 2, 3, 4, 5, 6),
		got AS (
			SELECT grain, period, status, source, assigned_to, enums, sum(n) AS n FROM lead_cube
			GROUP BY 1, 2, 3, 4, 5, 6 HAVING sum(n) <> 0)
		SELECT count(*) FROM ((TABLE want EXCEPT TABLE got) UNION ALL (TABLE got EXCEPT TABLE want)) diff`).Scan(&wrong); err != nil {
		t.Fatal(err)
	}
	// A list filters an enum on leads.enums (migration 008), which must
	// hold what custom_fields does through every write.
	var stale int
	if err := d.QueryRow(ctx, `SELECT count(*) FROM leads
		WHERE enums IS DISTINCT FROM custom_field_enums('leads', custom_fields)`).Scan(&stale); err != nil {
		t.Fatal(err)
	}
	if stale != 0 {
		t.Errorf("%s: %d leads' enums differ from their custom_fields' enum values", step, stale)
	}
	if wrong != 0 {
		t.Errorf("%s: %d cube keys differ from the leads", step, wrong)
	}

	day := func(s string) *time.Time {
		v, err := time.Parse(time.DateOnly, s)
		if err != nil {
			t.Fatal(err)
		}
		return &v
	}
	id := func(v int64) *int64 { return &v }
	type owner struct {
		assigned *int64
		scope    string
		caller   int64
	}
	owners := map[string]owner{
		"anyone": {}, "assigned 1": {assigned: id(1)}, "assigned 3": {assigned: id(3)},
		"me (1)": {scope: list.ScopeMe, caller: 1}, "team (1, team 10)": {scope: list.ScopeTeam, caller: 1},
		"team (4, no team)": {scope: list.ScopeTeam, caller: 4}, "team (9, unknown)": {scope: list.ScopeTeam, caller: 9},
	}
	eq := func(name string, values ...any) customfield.Filter {
		return customfield.Filter{Def: def[name], Op: customfield.Eq, Values: values}
	}
	customs := map[string][]customfield.Filter{
		"none": nil, "tier gold": {eq("tier", "gold")}, "tier gold or silver": {eq("tier", "gold", "silver")},
		"tier gold, region south": {eq("tier", "gold"), eq("region", "south")},
	}
	ranges := map[string][2]*time.Time{
		"all time": {}, "a day": {day("2026-02-14"), day("2026-02-15")},
		"across a month end":     {day("2026-02-25"), day("2026-03-04")},
		"whole months and edges": {day("2026-01-29"), day("2026-04-03")},
		"from only":              {day("2026-03-10"), nil}, "to only": {nil, day("2026-02-01")},
		"empty": {day("2026-03-01"), day("2026-02-01")},
	}
	check := func(name string, f leads.Filter, wantCubed bool) {
		t.Helper()
		f.Query.Page, f.Query.PerPage, f.Query.SortBy = 1, 5, leads.DefaultSort
		if _, _, ok := store.Cubed(f); ok != wantCubed {
			t.Errorf("%s: %s: cubed %v, want %v", step, name, ok, wantCubed)
		}
		w := store.Where(f)
		var want int
		if err := d.QueryRow(ctx, `SELECT count(*) FROM leads `+w.SQL(), w.Args()...).Scan(&want); err != nil {
			t.Fatalf("%s: %s: %v", step, name, err)
		}
		// The second page, as the ordered query gives it, whichever way
		// the list reads it: walking the sort index or one pass over the
		// matches.
		f.Query.Page = 2
		rows, err := d.Query(ctx, `SELECT id FROM leads `+w.SQL()+` ORDER BY `+store.Sorts.By[f.Query.SortBy]+`, id LIMIT 5 OFFSET 5`, w.Args()...)
		if err != nil {
			t.Fatal(err)
		}
		wantIDs, err := pgx.CollectRows(rows, pgx.RowTo[int64])
		if err != nil {
			t.Fatal(err)
		}
		for _, few := range []int{-1, 1 << 20} {
			page, got, err := st.WithFewMatches(few).List(ctx, f)
			if err != nil {
				t.Fatalf("%s: %s: %v", step, name, err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("%s: %s: total (-want +got):\n%s", step, name, diff)
			}
			gotIDs := []int64{}
			for _, l := range page {
				gotIDs = append(gotIDs, l.ID)
			}
			if diff := cmp.Diff(append([]int64{}, wantIDs...), gotIDs); diff != "" {
				t.Errorf("%s: %s, few=%d: page 2 ids (-ordered query +list):\n%s", step, name, few, diff)
			}
		}
	}
	for _, status := range []string{"", leads.StatusQualified} {
		for _, source := range []string{"", "WEB"} {
			for oName, o := range owners {
				for cName, c := range customs {
					for rName, r := range ranges {
						f := leads.Filter{Status: status, Source: source, AssignedTo: o.assigned, CallerID: o.caller,
							Custom: customfield.Query{Filters: c}}
						f.Query.Scope, f.Query.DateFrom, f.Query.DateTo = o.scope, r[0], r[1]
						check(fmt.Sprintf("status %q, source %q, %s, cf %s, %s", status, source, oName, cName, rName), f, true)
					}
				}
			}
		}
	}

	// Filters the cube does not answer count the leads.
	since := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	noon := time.Date(2026, 2, 14, 12, 0, 0, 0, time.UTC)
	for name, f := range map[string]leads.Filter{
		"an empty-field filter":     {Custom: customfield.Query{Filters: []customfield.Filter{{Def: def["tier"], Op: customfield.Empty, IsEmpty: true}}}},
		"a text field":              {Custom: customfield.Query{Filters: []customfield.Filter{eq("note", "a")}}},
		"updated since":             {Query: list.Query{UpdatedSince: &since}},
		"a range not on a day":      {Query: list.Query{DateFrom: &noon}},
		"owner 0":                   {AssignedTo: id(0)},
		"scope me without a caller": {Query: list.Query{Scope: list.ScopeMe}},
	} {
		check(name, f, false)
	}
	// A search answers from its own window count.
	f := leads.Filter{Status: leads.StatusNew}
	f.Query.Search = "l1"
	check("a search", f, false)
}
