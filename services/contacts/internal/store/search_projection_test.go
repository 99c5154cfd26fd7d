package store

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"

	"github.com/opencrm/crm/pkg/contract/propertyapi"
	"github.com/opencrm/crm/pkg/customfield"
	"github.com/opencrm/crm/pkg/db"
	"github.com/opencrm/crm/pkg/list"
	"github.com/opencrm/crm/pkg/list/listtest"
	"github.com/opencrm/crm/pkg/testdb"
	"github.com/opencrm/crm/services/contacts/internal/contacts"
)

// projectedCols are contact_search's columns (migration 017), which
// contacts holds under the same names.
const projectedCols = `id, company_id, search_text`

// projection reads table's projected columns, one JSON row per contact by id.
func projection(t *testing.T, ctx context.Context, q db.Querier, table string) []string {
	t.Helper()
	return testdb.Column[string](t, q, `SELECT to_jsonb(r)::text FROM (SELECT `+projectedCols+` FROM `+table+` ORDER BY id) r`)
}

// TestSearchProjectionFollowsWrites: after every write path of the store
// (a create, an update of a searched field, of an enum, of an unprojected
// field, a batch's creates, updates and deletes, the import's COPY, a
// company's rename, merge and deletion, a contact merge, a privacy
// erasure, a delete, the phone backfill, a truncate) contact_search holds
// exactly the projected columns of contacts, row for row.
func TestSearchProjectionFollowsWrites(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d, s := newTestStore(t)
	props := customfield.Store{DB: d, Stream: Stream}
	if _, err := props.Create(ctx, customfield.Object{Name: propertyapi.Contacts, Table: "contacts"}, propertyapi.PropertyInput{
		Name: "tier", Label: "Tier", Type: customfield.Enum, Options: []propertyapi.Option{{Value: "gold"}, {Value: "silver"}}}); err != nil {
		t.Fatal(err)
	}
	company := func(name string) int64 {
		c, err := s.CreateCompany(ctx, contacts.Company{Name: name, CustomFields: map[string]any{}})
		if err != nil {
			t.Fatal(err)
		}
		return c.ID
	}
	acme, beta, gamma := company("Acme"), company("Beta"), company("Gamma")
	contact := func(first, last, email string, companyID *int64, tier string) contacts.Contact {
		c := contacts.Contact{FirstName: first, LastName: last, Email: &email, Phone: ptr("+1 555 0100"), Status: contacts.StatusActive,
			Source: ptr("web"), AssignedTo: ptr(int64(7)), CompanyID: companyID, CustomFields: map[string]any{}}
		if tier != "" {
			c.CustomFields["tier"] = tier
		}
		return c
	}
	idOf := func(email string) int64 {
		var id int64
		if err := d.QueryRow(ctx, `SELECT id FROM contacts WHERE email = $1`, email).Scan(&id); err != nil {
			t.Fatalf("%s: %v", email, err)
		}
		return id
	}
	batch := func(fn func(w contacts.Writes) error) error {
		_, err := s.ContactBatch(ctx, "", nil, func(w contacts.Writes) ([]contacts.Result[contacts.Contact], error) {
			return nil, fn(w)
		})
		return err
	}
	keep := func(c contacts.Contact, _ []contacts.Contact, _ []customfield.Definition) (contacts.Contact, error) {
		return c, nil
	}
	keepCompany := func(c contacts.Company, _ []contacts.Company, _ []customfield.Definition) (contacts.Company, error) {
		return c, nil
	}

	for _, step := range []struct {
		name  string
		write func() error
		rows  int // contacts after the write
	}{
		{"create", func() error {
			_, err := s.CreateContact(ctx, contact("Ada", "Lovelace", "ada@x.example", &acme, "gold"))
			return err
		}, 1},
		{"update of searched and sorted fields", func() error {
			_, err := s.UpdateContact(ctx, idOf("ada@x.example"), func(c *contacts.Contact) error {
				c.LastName, c.Phone, c.Status, c.CompanyID = "King", ptr("+44 20 7946 0018"), contacts.StatusInactive, &beta
				return nil
			})
			return err
		}, 1},
		{"update of an enum", func() error {
			_, err := s.UpdateContact(ctx, idOf("ada@x.example"), func(c *contacts.Contact) error {
				c.CustomFields["tier"] = "silver"
				return nil
			})
			return err
		}, 1},
		{"update of an unprojected field", func() error {
			_, err := s.UpdateContact(ctx, idOf("ada@x.example"), func(c *contacts.Contact) error {
				c.Notes, c.JobTitle = ptr("met at the expo"), ptr("Analyst")
				return nil
			})
			return err
		}, 1},
		{"batch creates", func() error {
			return batch(func(w contacts.Writes) error {
				_, at, err := w.CreateContacts([]contacts.Contact{contact("Bob", "Smith", "bob@x.example", &acme, "gold"),
					contact("Cid", "Smith", "cid@x.example", nil, ""), contact("Dora", "Nguyen", "dora@x.example", &gamma, "silver")})
				if err == nil && at != -1 {
					err = fmt.Errorf("create failed at %d", at)
				}
				return err
			})
		}, 4},
		{"batch update and delete", func() error {
			return batch(func(w contacts.Writes) error {
				if _, _, err := w.UpdateContact(idOf("bob@x.example"), func(c *contacts.Contact) error {
					c.Email, c.AssignedTo = ptr("robert@x.example"), nil
					return nil
				}); err != nil {
					return err
				}
				return w.DeleteContact(idOf("cid@x.example"))
			})
		}, 3},
		{"import (COPY)", func() error {
			done := false
			_, errs, err := s.Import(ctx, func() ([]contacts.ImportRow, error) {
				if done {
					return nil, nil
				}
				done = true
				rows := []contacts.ImportRow{{Row: 2, CompanyName: "Delta Ltd"}, {Row: 3, CompanyName: "Acme"}}
				rows[0].Contact = contact("Eve", "Smith", "eve@x.example", nil, "")
				rows[1].Contact = contact("Finn", "Rossi", "finn@x.example", nil, "")
				rows[0].Contact.AssignedTo, rows[1].Contact.AssignedTo = nil, nil
				return rows, nil
			}, false)
			if err == nil && len(errs) > 0 {
				err = fmt.Errorf("row errors %+v", errs)
			}
			return err
		}, 5},
		{"company rename", func() error {
			_, err := s.UpdateCompany(ctx, acme, func(c *contacts.Company) error {
				c.Name = "Acme Analytical"
				return nil
			})
			return err
		}, 5},
		{"company merge", func() error {
			_, _, err := s.MergeCompanies(ctx, contacts.MergeRequest{Object: "company", Survivor: acme, Merged: []int64{gamma},
				Given: []int64{gamma}, Fields: map[string]int64{}}, nil, keepCompany)
			return err
		}, 5},
		{"company delete", func() error { return s.DeleteCompany(ctx, beta) }, 5},
		{"contact merge", func() error {
			_, _, err := s.MergeContacts(ctx, contacts.MergeRequest{Object: "contact", Survivor: idOf("eve@x.example"),
				Merged: []int64{idOf("finn@x.example")}, Given: []int64{idOf("finn@x.example")}, Fields: map[string]int64{}}, nil, keep)
			return err
		}, 4},
		{"privacy erasure", func() error {
			return d.InTx(ctx, func(tx pgx.Tx) error {
				_, err := s.ErasePerson(ctx, tx, "DORA@x.example")
				return err
			})
		}, 3},
		{"delete", func() error { return s.DeleteContact(ctx, idOf("robert@x.example")) }, 2},
		{"phone backfill", func() error {
			_, err := d.Exec(ctx, `UPDATE contacts SET phone_e164 = NULL`)
			if err == nil {
				_, err = s.BackfillPhones(ctx, 100)
			}
			return err
		}, 2},
		{"plain SQL update of many", func() error {
			_, err := d.Exec(ctx, `UPDATE contacts SET source = 'event', updated_at = updated_at + interval '1 hour'`)
			return err
		}, 2},
		{"truncate", func() error {
			_, err := d.Exec(ctx, `TRUNCATE contacts CASCADE`)
			return err
		}, 0},
	} {
		if err := step.write(); err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		want := projection(t, ctx, d, "contacts")
		if len(want) != step.rows {
			t.Fatalf("%s: %d contacts, want %d", step.name, len(want), step.rows)
		}
		if diff := cmp.Diff(want, projection(t, ctx, d, "contact_search")); diff != "" {
			t.Errorf("%s: contact_search differs from contacts (-want +got):\n%s", step.name, diff)
		}
	}
}

// TestSearchWalkAndFallbacks: a search's page comes from a walk of its other
// filters' sort order (searched) where the count cube counts those filters
// and the page's matches are near, and from one pass over its matches
// otherwise: a custom field other than an enum's equality filtered or
// sorted on, a company filter, an incremental sync, a term clustered at
// the far end of the order (the walk falls short). Either way the page
// and the exact total are those of the plain query on contacts, a page
// past the end too, and the export finds the same rows.
func TestSearchWalkAndFallbacks(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d, s := newTestStore(t)
	var walks struct {
		sync.Mutex
		found, short int
	}
	s.searchWalked = func(found bool) {
		walks.Lock()
		defer walks.Unlock()
		if found {
			walks.found++
		} else {
			walks.short++
		}
	}
	props := customfield.Store{DB: d, Stream: Stream}
	obj := customfield.Object{Name: propertyapi.Contacts, Table: "contacts"}
	tier, err := props.Create(ctx, obj, propertyapi.PropertyInput{
		Name: "tier", Label: "Tier", Type: customfield.Enum, Options: []propertyapi.Option{{Value: "gold"}, {Value: "silver"}}})
	if err != nil {
		t.Fatal(err)
	}
	score, err := props.Create(ctx, obj, propertyapi.PropertyInput{Name: "score", Label: "Score", Type: customfield.Number})
	if err != nil {
		t.Fatal(err)
	}
	for _, sql := range []string{
		`INSERT INTO directory_users (id, name, email, role, team_id, active, updated_at) VALUES
			(7, 'A', 'a@x.example', 'user', 3, true, now()), (8, 'B', 'b@x.example', 'user', 3, true, now())`,
		`INSERT INTO companies (name) VALUES ('Smithson Holdings'), ('Other Co')`,
		// A quarter of the contacts are Smiths by name; the contacts of
		// Smithson Holdings match through their company's name.
		`INSERT INTO contacts (first_name, last_name, email, status, source, assigned_to, company_id, custom_fields, created_at)
			SELECT 'P' || g, (ARRAY['Smith','Jones','Nguyen','Rossi'])[1 + g % 4], 'p' || g || '@x.example',
				CASE WHEN g % 3 = 0 THEN 'inactive' ELSE 'active' END, (ARRAY['web', 'event'])[1 + g % 2],
				CASE WHEN g % 5 = 0 THEN NULL WHEN g % 5 = 1 THEN 8 ELSE 7 END,
				(SELECT min(id) FROM companies) + g % 7 / 6,
				jsonb_build_object('tier', (ARRAY['gold','silver'])[1 + g % 2 * (g % 3 % 2)], 'score', g % 11),
				timestamptz '2026-01-01 00:00:00Z' + g * interval '7 hours'
			FROM generate_series(1, 240) g`,
		// Forty Zephyrs, created after everyone else.
		`INSERT INTO contacts (first_name, last_name, email, status, source, created_at)
			SELECT 'Z' || g, 'Zephyr', 'z' || g || '@x.example', 'active', 'web', timestamptz '2027-01-01 00:00:00Z' + g * interval '1 hour'
			FROM generate_series(1, 40) g`,
	} {
		if _, err := d.Exec(ctx, sql); err != nil {
			t.Fatalf("%v\n%s", err, sql)
		}
	}
	var smithson int64
	if err := d.QueryRow(ctx, `SELECT id FROM companies WHERE name = 'Smithson Holdings'`).Scan(&smithson); err != nil {
		t.Fatal(err)
	}
	from, to := time.Date(2026, 1, 20, 0, 0, 0, 0, time.UTC), time.Date(2026, 2, 20, 0, 0, 0, 0, time.UTC)
	gold := customfield.Filter{Def: tier, Op: customfield.Eq, Values: []any{"gold"}}
	atLeast5 := customfield.Filter{Def: score, Op: customfield.Gte, Values: []any{5.0}}
	smith := `(c.search_text LIKE '%smith%' OR c.company_id IN (SELECT id FROM companies WHERE lower(name) LIKE '%smith%'))`
	zephyr := `c.search_text LIKE '%zephyr%'`
	for _, tc := range []struct {
		name   string
		f      contacts.Filter
		search string // SMITH when empty
		walks  string // "found": some page came from a walk; "short": a walk fell short; "": no walk
		where  string // the filter on contacts c, plain SQL
		order  string
	}{
		{"search", contacts.Filter{}, "", "found", smith, "c.sort_name, c.id"},
		{"search by email desc", contacts.Filter{Query: list.Query{SortBy: "email", Desc: true}}, "", "found", smith,
			"lower(c.email) DESC, c.id DESC"},
		{"search, enum, status, owner, by company", contacts.Filter{Status: "active", AssignedTo: ptr(int64(7)),
			Query: list.Query{SortBy: "company_name"}, Custom: customfield.Query{Filters: []customfield.Filter{gold}}}, "", "found",
			smith + ` AND c.status = 'active' AND c.assigned_to = 7 AND c.enums @> '{"tier": "gold"}'`, "lower(c.company_name), c.id"},
		{"search, scope me, source, by created_at", contacts.Filter{Source: "event", Caller: 7,
			Query: list.Query{Scope: list.ScopeMe, SortBy: "created_at"}}, "", "found",
			smith + ` AND c.source = 'event' AND c.assigned_to = 7`, "c.created_at, c.id"},
		{"search, scope team, dates", contacts.Filter{Caller: 8, CallerTeam: ptr(int64(3)),
			Query: list.Query{Scope: list.ScopeTeam, DateFrom: &from, DateTo: &to}}, "", "found",
			smith + ` AND c.assigned_to IN (7, 8) AND c.created_at >= '2026-01-20' AND c.created_at < '2026-02-20'`, "c.sort_name, c.id"},
		{"search, company, updated since, by phone desc", contacts.Filter{CompanyID: &smithson,
			Query: list.Query{UpdatedSince: &from, SortBy: "phone", Desc: true}}, "", "",
			smith + fmt.Sprintf(` AND c.company_id = %d AND c.updated_at >= '2026-01-20'`, smithson), "c.phone DESC, c.id DESC"},
		{"search and a number range", contacts.Filter{Custom: customfield.Query{Filters: []customfield.Filter{atLeast5}}}, "", "",
			smith + ` AND (c.custom_fields->>'score')::numeric >= 5`, "c.sort_name, c.id"},
		{"search, enum and a number range", contacts.Filter{Custom: customfield.Query{Filters: []customfield.Filter{gold, atLeast5}}},
			"", "", smith + ` AND c.enums @> '{"tier": "gold"}' AND (c.custom_fields->>'score')::numeric >= 5`, "c.sort_name, c.id"},
		{"search sorted by a custom field", contacts.Filter{Query: list.Query{SortBy: customfield.SortPrefix + "score"},
			Custom: customfield.Query{Sort: &score}}, "", "", smith, "(c.custom_fields->>'score')::numeric NULLS LAST, c.id"},
		{"a term at the far end of the order", contacts.Filter{Query: list.Query{SortBy: "created_at"}}, "zephyr", "short",
			zephyr, "c.created_at, c.id"},
		{"a term at the near end of the order", contacts.Filter{Query: list.Query{SortBy: "created_at", Desc: true}}, "zephyr",
			"found", zephyr, "c.created_at DESC, c.id DESC"},
	} {
		tc.f.Search = "SMITH"
		if tc.search != "" {
			tc.f.Search = tc.search
		}
		if tc.f.SortBy == "" {
			tc.f.SortBy = "name"
		}
		walks.Lock()
		walks.found, walks.short = 0, 0
		walks.Unlock()
		var want []int64
		rows, err := d.Query(ctx, `SELECT c.id FROM contacts c WHERE `+tc.where+` ORDER BY `+tc.order)
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
			got, total, err := s.ListContacts(ctx, f)
			ids := []int64{}
			for _, c := range got {
				ids = append(ids, c.ID)
			}
			return ids, total, err
		})
		walks.Lock()
		found, short := walks.found, walks.short
		walks.Unlock()
		switch {
		case tc.walks == "found" && found == 0,
			tc.walks == "short" && short == 0,
			tc.walks == "" && found+short > 0:
			t.Errorf("%s: walks found %d pages and fell short %d times, want %q", tc.name, found, short, tc.walks)
		}
		var out bytes.Buffer
		if err := s.ExportContacts(ctx, tc.f, nil, &out); err != nil {
			t.Fatalf("%s: export: %v", tc.name, err)
		}
		exported := listtest.CSVIDs(t, tc.name, out.String())
		if diff := cmp.Diff(want, exported); diff != "" {
			t.Errorf("%s: exported ids (-want +got):\n%s", tc.name, diff)
		}
	}
}
