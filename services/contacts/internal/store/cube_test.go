package store

import (
	"context"
	"testing"
	"time"

	"github.com/opencrm/crm/pkg/contract/propertyapi"
	"github.com/opencrm/crm/pkg/customfield"
	"github.com/opencrm/crm/pkg/list"
	"github.com/opencrm/crm/services/contacts/internal/contacts"
)

// TestCubeTotalsEqualCounting: after inserts, updates of every dimension,
// deletes, a store write and a custom field's deletion, the total of
// every list the count cube answers equals count(*) of the same filter,
// before and after compaction.
func TestCubeTotalsEqualCounting(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d, s := newTestStore(t)
	props := customfield.Store{DB: d, Stream: Stream}
	obj := customfield.Object{Name: propertyapi.Contacts, Table: "contacts"}
	defs := map[string]customfield.Definition{}
	for _, in := range []propertyapi.PropertyInput{
		{Name: "tier", Label: "Tier", Type: customfield.Enum, Options: []propertyapi.Option{{Value: "gold"}, {Value: "silver"}, {Value: "bronze"}}},
		{Name: "region", Label: "Region", Type: customfield.Enum, Options: []propertyapi.Option{{Value: "emea"}, {Value: "apac"}}},
		{Name: "code", Label: "Code", Type: customfield.Text},
	} {
		def, err := props.Create(ctx, obj, in)
		if err != nil {
			t.Fatal(err)
		}
		defs[def.Name] = def
	}
	exec := func(sql string) {
		t.Helper()
		if _, err := d.Exec(ctx, sql); err != nil {
			t.Fatalf("%v\n%s", err, sql)
		}
	}
	exec(`INSERT INTO directory_users (id, name, email, role, team_id, active, updated_at) VALUES
		(7, 'A', 'a@x.example', 'user', 70, true, now()), (8, 'B', 'b@x.example', 'user', 70, true, now()),
		(9, 'C', 'c@x.example', 'user', NULL, true, now())`)
	exec(`INSERT INTO contacts (first_name, last_name, status, source, assigned_to, custom_fields, created_at)
		SELECT 'F' || g, 'L', CASE WHEN g % 3 = 0 THEN 'inactive' ELSE 'active' END,
			(ARRAY['web', 'event', NULL])[1 + g % 3], (ARRAY[7, 8, 9, NULL]::bigint[])[1 + g % 4],
			CASE WHEN g % 5 = 0 THEN '{}'::jsonb ELSE jsonb_build_object('tier', (ARRAY['gold','silver','bronze'])[1 + g % 3],
				'region', (ARRAY['emea','apac'])[1 + g % 2], 'code', 'C' || g) END,
			timestamptz '2026-01-01 00:00:00Z' + (g * 7) * interval '1 hour'
		FROM generate_series(1, 1500) g`)
	// Every dimension moves, some contacts go, one more arrives through the store.
	exec(`UPDATE contacts SET status = 'inactive', source = 'partner' WHERE id % 11 = 0`)
	exec(`UPDATE contacts SET assigned_to = NULL WHERE id % 13 = 0`)
	exec(`UPDATE contacts SET custom_fields = custom_fields || '{"tier": "gold"}' WHERE id % 17 = 0 AND custom_fields ? 'tier'`)
	exec(`UPDATE contacts SET created_at = created_at - interval '40 days' WHERE id % 19 = 0`)
	exec(`DELETE FROM contacts WHERE id % 23 = 0`)
	if _, err := s.CreateContact(ctx, contacts.Contact{FirstName: "S", LastName: "T", Status: contacts.StatusActive,
		Source: ptr("web"), AssignedTo: ptr(int64(7)), CustomFields: map[string]any{"tier": "silver"}}); err != nil {
		t.Fatal(err)
	}
	if err := props.Delete(ctx, obj, "region"); err != nil {
		t.Fatal(err)
	}

	day := func(s string) *time.Time {
		v, _ := time.Parse(time.DateOnly, s)
		return &v
	}
	enum := func(name string, values ...any) customfield.Filter {
		return customfield.Filter{Def: defs[name], Op: customfield.Eq, Values: values}
	}
	team := int64(70)
	filters := map[string]contacts.Filter{
		"none":                {},
		"status":              {Status: "inactive"},
		"source":              {Source: "web"},
		"owner":               {AssignedTo: ptr(int64(8))},
		"status+source":       {Status: "active", Source: "event"},
		"status+owner+source": {Status: "active", Source: "web", AssignedTo: ptr(int64(7))},
		"scope me":            {Query: list.Query{Scope: list.ScopeMe}, Caller: 9},
		"scope team":          {Query: list.Query{Scope: list.ScopeTeam}, Caller: 7, CallerTeam: &team},
		"scope team of one":   {Query: list.Query{Scope: list.ScopeTeam}, Caller: 9},
		"enum":                {Custom: customfield.Query{Filters: []customfield.Filter{enum("tier", "gold")}}},
		"enum any of":         {Custom: customfield.Query{Filters: []customfield.Filter{enum("tier", "gold", "bronze")}}},
		"enum+status+owner":   {Status: "active", AssignedTo: ptr(int64(7)), Custom: customfield.Query{Filters: []customfield.Filter{enum("tier", "silver")}}},
	}
	ranges := map[string][2]*time.Time{
		"all time":             {nil, nil},
		"one day":              {day("2026-02-03"), day("2026-02-04")},
		"across a month's end": {day("2026-01-25"), day("2026-02-06")},
		"months and edges":     {day("2025-12-14"), day("2026-03-09")},
		"from only":            {day("2026-02-10"), nil},
		"to only":              {nil, day("2026-01-20")},
	}
	check := func(stage string) {
		// A list filters an enum on contacts.enums (migration 014), which
		// must hold what custom_fields does through every write above.
		var stale int
		if err := d.QueryRow(ctx, `SELECT count(*) FROM contacts
			WHERE enums IS DISTINCT FROM custom_field_enums('contacts', custom_fields)`).Scan(&stale); err != nil {
			t.Fatal(err)
		}
		if stale != 0 {
			t.Errorf("%s: %d contacts' enums differ from their custom_fields' enum values", stage, stale)
		}
		for fname, f := range filters {
			for rname, r := range ranges {
				f := f
				f.Query.Page, f.Query.PerPage, f.Query.SortBy = 1, 5, contacts.DefaultSort
				f.Query.DateFrom, f.Query.DateTo = r[0], r[1]
				if _, _, ok := cubed(f); !ok {
					t.Fatalf("%s: the cube does not answer %s", stage, fname)
				}
				var want int
				w := filter(f)
				if err := d.QueryRow(ctx, `SELECT count(*) FROM contacts `+w.SQL(), w.Args()...).Scan(&want); err != nil {
					t.Fatal(err)
				}
				_, got, err := s.ListContacts(ctx, f)
				if err != nil {
					t.Fatal(err)
				}
				if got != want {
					t.Errorf("%s, %s, %s: total %d, counting the contacts %d", stage, fname, rname, got, want)
				}
			}
		}
	}
	check("with deltas")
	if err := s.CompactCounts(ctx); err != nil {
		t.Fatal(err)
	}
	var keys, rows int
	if err := d.QueryRow(ctx, `SELECT count(DISTINCT (grain, period, status, source, assigned_to, enums)), count(*) FROM contact_cube`).Scan(&keys, &rows); err != nil {
		t.Fatal(err)
	}
	if keys != rows {
		t.Errorf("after compaction %d cube rows hold %d keys", rows, keys)
	}
	check("compacted")
}

// TestCubeLeavesOtherFiltersToCounting: filters outside the cube's
// dimensions count the contacts.
func TestCubeLeavesOtherFiltersToCounting(t *testing.T) {
	t.Parallel()
	now := time.Now()
	rangeFilter := customfield.Filter{Def: customfield.Definition{Name: "score", Type: customfield.Number}, Op: customfield.Gte, Values: []any{"1"}}
	text := customfield.Filter{Def: customfield.Definition{Name: "code", Type: customfield.Text}, Op: customfield.Eq, Values: []any{"x"}}
	for name, f := range map[string]contacts.Filter{
		"search":              {Query: list.Query{Search: "ann"}},
		"company":             {CompanyID: ptr(int64(3))},
		"sync":                {Query: list.Query{UpdatedSince: &now}},
		"owner 0":             {AssignedTo: ptr(int64(0))},
		"scope me, no caller": {Query: list.Query{Scope: list.ScopeMe}},
		"number range":        {Custom: customfield.Query{Filters: []customfield.Filter{rangeFilter}}},
		"text":                {Custom: customfield.Query{Filters: []customfield.Filter{text}}},
	} {
		if _, _, ok := cubed(f); ok {
			t.Errorf("%s: the cube answers it", name)
		}
	}
}

func ptr[T any](v T) *T { return &v }
