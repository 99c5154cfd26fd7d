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
	"github.com/opencrm/crm/services/leads/internal/leads"
	"github.com/opencrm/crm/services/leads/internal/store"
)

// projectedCols are lead_search's columns (migration 011), which leads
// holds under the same names.
const projectedCols = `id, first_name, last_name, email, company, source, status, assigned_to, assigned_to_name,
	created_at, updated_at, enums, search_text`

// projection reads table's projected columns, one JSON row per lead by id.
func projection(t *testing.T, d *db.DB, table string) []string {
	t.Helper()
	rows, err := d.Query(context.Background(), `SELECT to_jsonb(r)::text FROM (SELECT `+projectedCols+` FROM `+table+` ORDER BY id) r`)
	if err != nil {
		t.Fatal(err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
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
// of leads, row for row.
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
		rows  int // leads after the write
	}{
		{"create", func() error {
			_, err := s.Create(ctx, lead("Ada", "Lovelace", "ada@x.example", "gold"))
			return err
		}, 1},
		{"intake's keyed create", func() error {
			_, err := s.CreateOnce(ctx, "intake-1", "req", lead("Bob", "Smith", "bob@x.example", ""))
			return err
		}, 2},
		{"intake's batch create", func() error {
			_, err := s.CreateManyOnce(ctx, []string{"intake-2", "intake-3"},
				[]leads.Lead{lead("Cid", "Smith", "cid@x.example", "silver"), lead("Dora", "Nguyen", "dora@x.example", "")})
			return err
		}, 4},
		{"update of searched and sorted fields", func() error {
			return update("ada@x.example", func(l *leads.Lead) {
				l.LastName, l.Phone, l.Company, l.Status, l.Source = "King", ptr("+44 20 7946 0018"), ptr("Beta"), leads.StatusContacted, nil
			})
		}, 4},
		{"update of an enum", func() error {
			return update("ada@x.example", func(l *leads.Lead) { l.CustomFields["tier"] = "silver" })
		}, 4},
		{"update of an unprojected field", func() error {
			return update("ada@x.example", func(l *leads.Lead) { l.Notes, l.JobTitle = ptr("met at the expo"), ptr("Analyst") })
		}, 4},
		{"update of the owner", func() error {
			return update("bob@x.example", func(l *leads.Lead) { l.AssignedTo = nil })
		}, 4},
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
		}, 4},
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
		}, 6},
		{"qualification", func() error {
			_, err := s.FinishQualification(ctx, idOf("eve@x.example"), leads.Saga{Company: leads.Step{ID: ptr(int64(11))},
				Contact: leads.Step{ID: ptr(int64(12))}, Deal: leads.Step{ID: ptr(int64(13))}})
			return err
		}, 6},
		{"disqualification", func() error {
			_, err := s.Disqualify(ctx, idOf("imp1@x.example"), ptr("no budget"))
			return err
		}, 6},
		{"assignee rename", func() error {
			if _, err := d.Exec(ctx, `UPDATE directory_users SET name = 'Rep 7 Renamed' WHERE id = 7`); err != nil {
				return err
			}
			_, err := s.RefreshAssigneeNames(ctx, ptr(int64(7)))
			return err
		}, 6},
		{"merge moving leads", func() error {
			_, err := s.MoveLeads(ctx, mergeapi.Contact, 99, []int64{12})
			return err
		}, 6},
		{"privacy erasure", func() error {
			return d.InTx(ctx, func(tx pgx.Tx) error {
				_, err := s.ErasePerson(ctx, tx, "BOB@x.example")
				return err
			})
		}, 5},
		{"delete", func() error { return s.Delete(ctx, idOf("imp2@x.example")) }, 4},
		{"plain SQL update of many", func() error {
			_, err := d.Exec(ctx, `UPDATE leads SET source = 'event', updated_at = updated_at + interval '1 hour'`)
			return err
		}, 4},
		{"truncate", func() error {
			_, err := d.Exec(ctx, `TRUNCATE leads CASCADE`)
			return err
		}, 0},
	} {
		if err := step.write(); err != nil {
			t.Fatalf("%s: %v", step.name, err)
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

// TestSearchFallbacks: a search reads its matches from lead_search when
// the projection holds every other filtered and sorted column, and from
// leads (the projection's trigram index giving the ids) when a custom
// field other than an enum's equality is filtered or sorted on. Either way
// the page and the exact total are those of the plain query on leads, a
// page past the end too, and the export finds the same rows.
func TestSearchFallbacks(t *testing.T) {
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
	// A quarter of the leads are Smiths by name, and the company of every
	// seventh is Smithson Holdings: both match a search for smith.
	if _, err := d.Exec(ctx, `INSERT INTO leads (first_name, last_name, email, company, status, source, assigned_to, custom_fields, created_at)
		SELECT 'P' || g, (ARRAY['Smith','Jones','Nguyen','Rossi'])[1 + g % 4], 'p' || g || '@x.example',
			CASE WHEN g % 7 = 0 THEN 'Smithson Holdings' ELSE 'Other Co' END,
			(ARRAY['new','contacted','qualified'])[1 + g % 3], (ARRAY['web', 'event'])[1 + g % 2],
			CASE WHEN g % 5 = 0 THEN NULL ELSE 7 END,
			jsonb_build_object('tier', (ARRAY['gold','silver'])[1 + g % 2 * (g % 3 % 2)], 'score', g % 11),
			timestamptz '2026-01-01 00:00:00Z' + g * interval '7 hours'
		FROM generate_series(1, 240) g`); err != nil {
		t.Fatal(err)
	}
	gold := customfield.Filter{Def: tier, Op: customfield.Eq, Values: []any{"gold"}}
	atLeast5 := customfield.Filter{Def: score, Op: customfield.Gte, Values: []any{5.0}}
	smith := `l.search_text LIKE '%smith%'`
	for _, tc := range []struct {
		name  string
		f     leads.Filter
		table string // the table searchFrom picks
		where string // the filter on leads l, plain SQL
		order string
	}{
		{"search", leads.Filter{}, store.FromProjection, smith, "lower(l.first_name || ' ' || l.last_name), l.id"},
		{"search by email desc", leads.Filter{Query: list.Query{SortBy: "email", Desc: true}}, store.FromProjection, smith,
			"lower(l.email) DESC, l.id DESC"},
		{"search, enum, status, owner, by company", leads.Filter{Status: "new", AssignedTo: ptr(int64(7)),
			Query: list.Query{SortBy: "company_name"}, Custom: customfield.Query{Filters: []customfield.Filter{gold}}}, store.FromProjection,
			smith + ` AND l.status = 'new' AND l.assigned_to = 7 AND l.enums @> '{"tier": "gold"}'`, "lower(l.company), l.id"},
		{"search, scope me, source, by created_at", leads.Filter{Source: "EVENT", CallerID: 7,
			Query: list.Query{Scope: list.ScopeMe, SortBy: "created_at"}}, store.FromProjection,
			smith + ` AND l.source = 'event' AND l.assigned_to = 7`, "l.created_at, l.id"},
		{"search by assignee name desc", leads.Filter{Query: list.Query{SortBy: "assigned_to_name", Desc: true}}, store.FromProjection,
			smith, "lower(l.assigned_to_name) DESC, l.id DESC"},
		{"search and a number range", leads.Filter{Custom: customfield.Query{Filters: []customfield.Filter{atLeast5}}}, store.FromLeads,
			smith + ` AND (l.custom_fields->>'score')::numeric >= 5`, "lower(l.first_name || ' ' || l.last_name), l.id"},
		{"search, enum and a number range", leads.Filter{Custom: customfield.Query{Filters: []customfield.Filter{gold, atLeast5}}},
			store.FromLeads, smith + ` AND l.enums @> '{"tier": "gold"}' AND (l.custom_fields->>'score')::numeric >= 5`,
			"lower(l.first_name || ' ' || l.last_name), l.id"},
		{"search sorted by a custom field", leads.Filter{Query: list.Query{SortBy: customfield.SortPrefix + "score"},
			Custom: customfield.Query{Sort: &score}}, store.FromLeads, smith, "(l.custom_fields->>'score')::numeric NULLS LAST, l.id"},
	} {
		tc.f.Search = "SMITH"
		if tc.f.SortBy == "" {
			tc.f.SortBy = "name"
		}
		if got := store.SearchFrom(tc.f); got != tc.table {
			t.Errorf("%s: reads %s, want %s", tc.name, got, tc.table)
		}
		var want []int64
		rows, err := d.Query(ctx, `SELECT l.id FROM leads l WHERE `+tc.where+` ORDER BY `+tc.order)
		if err == nil {
			want, err = pgx.CollectRows(rows, pgx.RowTo[int64])
		}
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if len(want) < 10 {
			t.Fatalf("%s: %d matches, too few to page through", tc.name, len(want))
		}
		listtest.Pages(t, tc.name, want, func(page, perPage int) ([]int64, int, error) {
			f := tc.f
			f.Page, f.PerPage = page, perPage
			got, total, err := s.List(ctx, f)
			ids := []int64{}
			for _, l := range got {
				ids = append(ids, l.ID)
			}
			return ids, total, err
		})
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
