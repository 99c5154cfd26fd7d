package store_test

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"

	"github.com/opencrm/crm/pkg/contract/mergeapi"
	"github.com/opencrm/crm/pkg/contract/propertyapi"
	"github.com/opencrm/crm/pkg/customfield"
	"github.com/opencrm/crm/pkg/db"
	"github.com/opencrm/crm/pkg/list"
	"github.com/opencrm/crm/pkg/list/listtest"
	"github.com/opencrm/crm/pkg/testdb"
	"github.com/opencrm/crm/services/leads/internal/leads"
	"github.com/opencrm/crm/services/leads/internal/store"
)

// projectedCols are lead_search's columns (migration 013), which leads
// holds under the same names.
const projectedCols = `id, search_text`

// projection reads table's projected columns, one JSON row per lead by id.
func projection(t *testing.T, d *db.DB, table string) []string {
	t.Helper()
	return testdb.Column[string](t, d, `SELECT to_jsonb(r)::text FROM (SELECT `+projectedCols+` FROM `+table+` ORDER BY id) r`)
}

// versions is each lead_search row's xmin by id: the transaction that
// last wrote it.
func versions(t *testing.T, d *db.DB) map[int64]string {
	t.Helper()
	rows, err := d.Query(context.Background(), `SELECT id, xmin::text FROM lead_search`)
	if err != nil {
		t.Fatal(err)
	}
	out := map[int64]string{}
	var id int64
	var xmin string
	if _, err := pgx.ForEachRow(rows, []any{&id, &xmin}, func() error {
		out[id] = xmin
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

func ptr[T any](v T) *T { return &v }

// TestSearchProjectionFollowsWrites: after every write path of the store
// (a create, the intake's keyed create and batch create, an update of a
// searched field, of an enum, of an unprojected field, a batch's create,
// update and delete, the import's COPY, qualification, disqualification,
// an assignee rename, a merge moving leads, a privacy erasure, a delete,
// plain SQL, a truncate) lead_search holds exactly the projected columns
// of leads, row for row; and the writes that leave every search text
// alone write no row of lead_search (each row's xmin stays).
func TestSearchProjectionFollowsWrites(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d, s := newStore(t)
	if _, err := d.Exec(ctx, `INSERT INTO directory_users (id, name, email, role, active, updated_at)
		VALUES (7, 'Rep Seven', 'seven@example.com', 'sales_rep', true, now())`); err != nil {
		t.Fatal(err)
	}
	props := customfield.Store{DB: d, Stream: leads.Stream}
	if _, err := props.Create(ctx, leads.Object, propertyapi.PropertyInput{Name: "tier", Label: "Tier", Type: customfield.Enum,
		Options: []propertyapi.Option{{Value: "gold", Label: "Gold"}, {Value: "silver", Label: "Silver"}}}); err != nil {
		t.Fatal(err)
	}
	defs, err := s.Definitions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	lead := func(first, last, email, tier string) leads.Lead {
		l := leads.Lead{FirstName: first, LastName: last, Email: &email, Phone: ptr("+1 555 0100"), Company: ptr("Acme"),
			Status: leads.StatusNew, Source: ptr("web"), AssignedTo: ptr(int64(7)), CustomFields: map[string]any{}}
		if tier != "" {
			l.CustomFields["tier"] = tier
		}
		return l
	}
	idOf := func(email string) int64 {
		var id int64
		if err := d.QueryRow(ctx, `SELECT id FROM leads WHERE email = $1`, email).Scan(&id); err != nil {
			t.Fatalf("%s: %v", email, err)
		}
		return id
	}
	update := func(email string, change func(l *leads.Lead)) error {
		_, err := s.Update(ctx, idOf(email), func(l *leads.Lead) error {
			change(l)
			return nil
		})
		return err
	}
	for _, step := range []struct {
		name  string
		write func() error
		rows  int  // leads after the write
		same  bool // no search text changes: lead_search is not written
	}{
		{"create", func() error {
			_, err := s.Create(ctx, lead("Ada", "Lovelace", "ada@x.example", "gold"))
			return err
		}, 1, false},
		{"intake's keyed create", func() error {
			_, err := s.CreateOnce(ctx, "intake-1", "req", lead("Bob", "Smith", "bob@x.example", ""))
			return err
		}, 2, false},
		{"intake's batch create", func() error {
			_, err := s.CreateManyOnce(ctx, []string{"intake-2", "intake-3"},
				[]leads.Lead{lead("Cid", "Smith", "cid@x.example", "silver"), lead("Dora", "Nguyen", "dora@x.example", "")})
			return err
		}, 4, false},
		{"update of searched and sorted fields", func() error {
			return update("ada@x.example", func(l *leads.Lead) {
				l.LastName, l.Phone, l.Company, l.Status, l.Source = "King", ptr("+44 20 7946 0018"), ptr("Beta"), leads.StatusContacted, nil
			})
		}, 4, false},
		{"update of an enum", func() error {
			return update("ada@x.example", func(l *leads.Lead) { l.CustomFields["tier"] = "silver" })
		}, 4, true},
		{"update of an unprojected field", func() error {
			return update("ada@x.example", func(l *leads.Lead) { l.Notes, l.JobTitle = ptr("met at the expo"), ptr("Analyst") })
		}, 4, true},
		{"update of the owner", func() error {
			return update("bob@x.example", func(l *leads.Lead) { l.AssignedTo = nil })
		}, 4, true},
		{"batch create, update and delete", func() error {
			_, err := s.Batch(ctx, "", nil, func(tx leads.Tx) ([]leads.Result, error) {
				if _, err := tx.Insert(ctx, lead("Eve", "Rossi", "eve@x.example", "gold")); err != nil {
					return nil, err
				}
				l, _, err := tx.Lock(ctx, idOf("cid@x.example"))
				if err != nil {
					return nil, err
				}
				l.Email = ptr("cidney@x.example")
				if _, err := tx.Save(ctx, l); err != nil {
					return nil, err
				}
				_, err = tx.Delete(ctx, idOf("dora@x.example"))
				return nil, err
			})
			return err
		}, 4, false},
		{"import (COPY)", func() error {
			row := 0
			_, err := s.Import(ctx, func() (store.ImportRow, bool, error) {
				if row++; row > 2 {
					return store.ImportRow{}, false, nil
				}
				l := lead(fmt.Sprint("Imp", row), "Tanaka", fmt.Sprintf("imp%d@x.example", row), "gold")
				l.AssignedTo = nil
				return store.ImportRow{Row: row + 1, Lead: l}, true, nil
			}, store.ImportOptions{MaxSkips: 10, Definitions: defs})
			return err
		}, 6, false},
		{"qualification", func() error {
			_, err := s.FinishQualification(ctx, idOf("eve@x.example"), leads.Saga{Company: leads.Step{ID: ptr(int64(11))},
				Contact: leads.Step{ID: ptr(int64(12))}, Deal: leads.Step{ID: ptr(int64(13))}})
			return err
		}, 6, true},
		{"disqualification", func() error {
			_, err := s.Disqualify(ctx, idOf("imp1@x.example"), ptr("no budget"))
			return err
		}, 6, true},
		{"assignee rename", func() error {
			if _, err := d.Exec(ctx, `UPDATE directory_users SET name = 'Rep 7 Renamed' WHERE id = 7`); err != nil {
				return err
			}
			_, err := s.RefreshAssigneeNames(ctx, ptr(int64(7)))
			return err
		}, 6, true},
		{"merge moving leads", func() error {
			_, err := s.MoveLeads(ctx, mergeapi.Contact, 99, []int64{12})
			return err
		}, 6, true},
		{"privacy erasure", func() error {
			return d.InTx(ctx, func(tx pgx.Tx) error {
				_, err := s.ErasePerson(ctx, tx, "BOB@x.example")
				return err
			})
		}, 5, false},
		{"delete", func() error { return s.Delete(ctx, idOf("imp2@x.example")) }, 4, false},
		{"plain SQL update of many", func() error {
			_, err := d.Exec(ctx, `UPDATE leads SET source = 'event', updated_at = updated_at + interval '1 hour'`)
			return err
		}, 4, true},
		{"truncate", func() error {
			_, err := d.Exec(ctx, `TRUNCATE leads CASCADE`)
			return err
		}, 0, false},
	} {
		before := versions(t, d)
		if err := step.write(); err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		if after := versions(t, d); step.same {
			if diff := cmp.Diff(before, after); diff != "" {
				t.Errorf("%s: lead_search rows written (-before +after):\n%s", step.name, diff)
			}
		}
		want := projection(t, d, "leads")
		if len(want) != step.rows {
			t.Fatalf("%s: %d leads, want %d", step.name, len(want), step.rows)
		}
		if diff := cmp.Diff(want, projection(t, d, "lead_search")); diff != "" {
			t.Errorf("%s: lead_search differs from leads (-want +got):\n%s", step.name, diff)
		}
	}
}

// TestSearchWalkAndFallbacks: a search's page comes from a walk of the
// other filters' sort order where the count cube counts that order's rows
// and the walk is short enough, from one pass over the matches otherwise
// (a custom-field filter or sort, a deep page, a walk that found fewer
// than a page: the matches cluster at the far end of the order). Either
// way the pages and the exact totals are those of the plain query on
// leads, a page past the end too, and the export finds the same rows.
func TestSearchWalkAndFallbacks(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d, s := newStore(t)
	props := customfield.Store{DB: d, Stream: leads.Stream}
	tier, err := props.Create(ctx, leads.Object, propertyapi.PropertyInput{Name: "tier", Label: "Tier", Type: customfield.Enum,
		Options: []propertyapi.Option{{Value: "gold", Label: "Gold"}, {Value: "silver", Label: "Silver"}}})
	if err != nil {
		t.Fatal(err)
	}
	score, err := props.Create(ctx, leads.Object, propertyapi.PropertyInput{Name: "score", Label: "Score", Type: customfield.Number})
	if err != nil {
		t.Fatal(err)
	}
	// 6,000 leads: a quarter are Smiths by name, and the company of every
	// seventh is Smithson Holdings, both found by smith (2,143 leads); every
	// fiftieth but Smithson's works at Needle Inc (103). Thirty more, all
	// Ortegas without an owner, sort after every other by name.
	if _, err := d.Exec(ctx, `INSERT INTO leads (first_name, last_name, email, company, status, source, assigned_to, custom_fields, created_at)
		SELECT 'P' || g, (ARRAY['Smith','Jones','Nguyen','Rossi'])[1 + g % 4], 'p' || g || '@x.example',
			CASE WHEN g % 7 = 0 THEN 'Smithson Holdings' WHEN g % 50 = 1 THEN 'Needle Inc' ELSE 'Other Co' END,
			(ARRAY['new','contacted','qualified'])[1 + g % 3], (ARRAY['web', 'event'])[1 + g % 2],
			CASE WHEN g % 5 = 0 THEN NULL ELSE 7 END,
			jsonb_build_object('tier', (ARRAY['gold','silver'])[1 + g % 2 * (g % 3 % 2)], 'score', g % 11),
			timestamptz '2026-01-01 00:00:00Z' + g * interval '7 hours'
		FROM generate_series(1, 6000) g;
		INSERT INTO leads (first_name, last_name, email, company, status, custom_fields)
		SELECT 'Zz' || g, 'Ortega', 'p5' || g || 'z@x.example', 'Other Co', 'new', '{}'
		FROM generate_series(1, 30) g`); err != nil {
		t.Fatal(err)
	}
	gold := customfield.Filter{Def: tier, Op: customfield.Eq, Values: []any{"gold"}}
	atLeast5 := customfield.Filter{Def: score, Op: customfield.Gte, Values: []any{5.0}}
	smith := `l.search_text LIKE '%smith%'`
	byName := "lower(l.first_name || ' ' || l.last_name), l.id"
	// How the first and the last page are found: a walk that found the
	// page, one that fell short (then one pass over the matches), or no
	// walk (one pass, or no page past the end).
	const found, short, pass = "walk found the page", "walk fell short", "no walk"
	for _, tc := range []struct {
		name        string
		f           leads.Filter
		where       string // the filter on leads l, plain SQL
		order       string
		first, last string
	}{
		{"search", leads.Filter{}, smith, byName, found, pass},
		{"search and an owner by name desc", leads.Filter{AssignedTo: ptr(int64(7)), Query: list.Query{Desc: true}},
			smith + ` AND l.assigned_to = 7`, "lower(l.first_name || ' ' || l.last_name) DESC, l.id DESC", found, pass},
		{"search by email", leads.Filter{Query: list.Query{SortBy: "email"}}, smith, "lower(l.email), l.id", found, pass},
		{"search by email desc", leads.Filter{Query: list.Query{SortBy: "email", Desc: true}}, smith,
			"lower(l.email) DESC, l.id DESC", found, pass},
		{"search and a status by created_at", leads.Filter{Status: "contacted", Query: list.Query{SortBy: "created_at"}},
			smith + ` AND l.status = 'contacted'`, "l.created_at, l.id", found, pass},
		{"search, enum, status, owner, by company", leads.Filter{Status: "new", AssignedTo: ptr(int64(7)),
			Query: list.Query{SortBy: "company_name"}, Custom: customfield.Query{Filters: []customfield.Filter{gold}}},
			smith + ` AND l.status = 'new' AND l.assigned_to = 7 AND l.enums @> '{"tier": "gold"}'`, "lower(l.company), l.id", short, found},
		{"search, scope me, source, by created_at desc", leads.Filter{Source: "EVENT", CallerID: 7,
			Query: list.Query{Scope: list.ScopeMe, SortBy: "created_at", Desc: true}},
			smith + ` AND l.source = 'event' AND l.assigned_to = 7`, "l.created_at DESC, l.id DESC", found, pass},
		{"search by assignee name desc", leads.Filter{Query: list.Query{SortBy: "assigned_to_name", Desc: true}},
			smith, "lower(l.assigned_to_name) DESC, l.id DESC", found, pass},
		{"a rarer term, deep pages past the longest walk", leads.Filter{Query: list.Query{Search: "needle"}},
			`l.search_text LIKE '%needle%'`, byName, found, pass},
		{"matches at the far end of the walk", leads.Filter{Query: list.Query{Search: "ortega"}},
			`l.search_text LIKE '%ortega%'`, byName, short, pass},
		{"matches at the start of the walk", leads.Filter{Query: list.Query{Search: "ortega", Desc: true}},
			`l.search_text LIKE '%ortega%'`, "lower(l.first_name || ' ' || l.last_name) DESC, l.id DESC", found, pass},
		{"search and a number range", leads.Filter{Custom: customfield.Query{Filters: []customfield.Filter{atLeast5}}},
			smith + ` AND (l.custom_fields->>'score')::numeric >= 5`, byName, pass, pass},
		{"search, enum and a number range", leads.Filter{Custom: customfield.Query{Filters: []customfield.Filter{gold, atLeast5}}},
			smith + ` AND l.enums @> '{"tier": "gold"}' AND (l.custom_fields->>'score')::numeric >= 5`, byName, pass, pass},
		{"search sorted by a custom field", leads.Filter{Query: list.Query{SortBy: customfield.SortPrefix + "score"},
			Custom: customfield.Query{Sort: &score}}, smith, "(l.custom_fields->>'score')::numeric NULLS LAST, l.id", pass, pass},
	} {
		if tc.f.Search == "" {
			tc.f.Search = "SMITH"
		}
		if tc.f.SortBy == "" {
			tc.f.SortBy = "name"
		}
		var want []int64
		rows, err := d.Query(ctx, `SELECT l.id FROM leads l WHERE `+tc.where+` ORDER BY `+tc.order)
		if err == nil {
			want, err = pgx.CollectRows(rows, pgx.RowTo[int64])
		}
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if len(want) < 3*listtest.PerPage {
			t.Fatalf("%s: %d matches, too few to page through", tc.name, len(want))
		}
		how := map[int]string{}
		listtest.Pages(t, tc.name, want, func(page, perPage int) ([]int64, int, error) {
			f := tc.f
			f.Page, f.PerPage = page, perPage
			how[page] = pass
			got, total, err := s.WithSearchWalked(func(ok bool) {
				how[page] = map[bool]string{true: found, false: short}[ok]
			}).List(ctx, f)
			ids := []int64{}
			for _, l := range got {
				ids = append(ids, l.ID)
			}
			return ids, total, err
		})
		got := [2]string{how[1], how[len(want)/listtest.PerPage+1]}
		if diff := cmp.Diff([2]string{tc.first, tc.last}, got); diff != "" {
			t.Errorf("%s: first and last page found by (-want +got):\n%s", tc.name, diff)
		}
		var out bytes.Buffer
		if err := s.Export(ctx, tc.f, nil, &out); err != nil {
			t.Fatalf("%s: export: %v", tc.name, err)
		}
		exported := listtest.CSVIDs(t, tc.name, out.String())
		if diff := cmp.Diff(want, exported); diff != "" {
			t.Errorf("%s: exported ids (-want +got):\n%s", tc.name, diff)
		}
	}
}
