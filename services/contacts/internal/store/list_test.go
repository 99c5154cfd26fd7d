package store

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"

	"github.com/opencrm/crm/pkg/contract/propertyapi"
	"github.com/opencrm/crm/pkg/customfield"
	"github.com/opencrm/crm/pkg/list"
	"github.com/opencrm/crm/services/contacts/internal/contacts"
)

// TestPageStrategiesAgree: whichever way a page is read (a sort-index
// walk, one pass over few matches, none past the end), it holds the rows
// the plain ordered query gives for every filter, sort, direction and
// page, and the total is count(*).
func TestPageStrategiesAgree(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d, s := newTestStore(t)
	props := customfield.Store{DB: d, Stream: Stream}
	tier, err := props.Create(ctx, customfield.Object{Name: propertyapi.Contacts, Table: "contacts"}, propertyapi.PropertyInput{
		Name: "tier", Label: "Tier", Type: customfield.Enum, Options: []propertyapi.Option{{Value: "gold"}, {Value: "silver"}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, sql := range []string{
		`INSERT INTO directory_users (id, name, email, role, team_id, active, updated_at) VALUES (7, 'A', 'a@x.example', 'user', NULL, true, now())`,
		`INSERT INTO companies (name) SELECT 'Co ' || g FROM generate_series(1, 5) g`,
		// Names correlate with status and source, as real data can: the
		// walk of the name index meets long runs of rows it filters out.
		`INSERT INTO contacts (first_name, last_name, email, phone, status, source, assigned_to, company_id, custom_fields, created_at)
			SELECT (ARRAY['Ann','Bob','Cid'])[1 + g % 3] || g, 'L' || g % 7, 'u' || g % 50 || '@x.example', '+1 555 ' || g % 40,
				CASE WHEN g % 3 = 0 THEN 'inactive' ELSE 'active' END, (ARRAY['web', 'event', NULL])[1 + g % 3],
				CASE WHEN g % 4 = 0 THEN NULL ELSE 7 END, (SELECT min(id) FROM companies) + g % 5,
				jsonb_build_object('tier', (ARRAY['gold','silver'])[1 + g % 2]),
				timestamptz '2026-01-01 00:00:00Z' + g * interval '5 hours'
			FROM generate_series(1, 300) g`,
	} {
		if _, err := d.Exec(ctx, sql); err != nil {
			t.Fatalf("%v\n%s", err, sql)
		}
	}
	var company int64
	if err := d.QueryRow(ctx, `SELECT min(id) + 2 FROM companies`).Scan(&company); err != nil {
		t.Fatal(err)
	}
	gold := customfield.Query{Filters: []customfield.Filter{{Def: tier, Op: customfield.Eq, Values: []any{"gold"}}}}
	filters := map[string]contacts.Filter{
		"none":                    {},
		"status":                  {Status: "inactive"},
		"status+source":           {Status: "active", Source: "web"},
		"nothing matches":         {Status: "inactive", Source: "event"},
		"owner+enum":              {AssignedTo: ptr(int64(7)), Custom: gold},
		"scope me+status":         {Query: list.Query{Scope: list.ScopeMe}, Caller: 7, Status: "active"},
		"company":                 {CompanyID: &company},
		"company+status":          {CompanyID: &company, Status: "active"},
		"enum+source":             {Source: "event", Custom: gold},
		"updated since (no cube)": {Query: list.Query{UpdatedSince: ptr(time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC))}},
	}
	for fname, f := range filters {
		for _, few := range []int{-1, 1 << 20} { // always walk; always one pass
			for _, key := range contacts.ContactSorts {
				for _, desc := range []bool{false, true} {
					for _, page := range []int{1, 3, 40} {
						f := f
						f.Query.SortBy, f.Query.Desc, f.Query.Page, f.Query.PerPage = key, desc, page, 7
						name := fmt.Sprintf("%s/few=%d/%s/desc=%t/page=%d", fname, few, key, desc, page)
						s := *s
						s.fewMatches = few
						got, total, err := s.ListContacts(ctx, f)
						if err != nil {
							t.Fatalf("%s: %v", name, err)
						}
						w := filter(f)
						var want int
						if err := d.QueryRow(ctx, `SELECT count(*) FROM contacts `+w.SQL(), w.Args()...).Scan(&want); err != nil {
							t.Fatal(err)
						}
						if total != want {
							t.Errorf("%s: total %d, count(*) %d", name, total, want)
						}
						expr, dir := sortKey(f)
						rows, err := d.Query(ctx, `SELECT id FROM contacts `+w.SQL()+` ORDER BY `+expr+` `+dir+`, id `+dir+
							fmt.Sprintf(` LIMIT %d OFFSET %d`, f.Query.PerPage, f.Query.Offset()), w.Args()...)
						if err != nil {
							t.Fatal(err)
						}
						wantIDs, err := pgx.CollectRows(rows, pgx.RowTo[int64])
						if err != nil {
							t.Fatal(err)
						}
						gotIDs := []int64{}
						for _, c := range got {
							gotIDs = append(gotIDs, c.ID)
						}
						if wantIDs == nil {
							wantIDs = []int64{}
						}
						if diff := cmp.Diff(wantIDs, gotIDs); diff != "" {
							t.Errorf("%s: page ids (-ordered query +list):\n%s", name, diff)
						}
					}
				}
			}
		}
	}
}
