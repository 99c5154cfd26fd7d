package store

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/opencrm/crm/pkg/list"
	"github.com/opencrm/crm/services/contacts/internal/contacts"
)

// TestExportContactsFilters: the export's COPY takes every filter's values
// as literals (csvx.Inline): each kind of filter selects the rows the list
// would, and hostile values are only ever values — a value built to end
// the literal or comment out the rest matches the one contact holding it
// exactly and nothing else, and the table is still there.
func TestExportContactsFilters(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d, s := newTestStore(t)
	const evil = `x'); DROP TABLE contacts; --`
	if _, err := d.Exec(ctx, `INSERT INTO contacts (id, first_name, last_name, source, status, assigned_to, created_at, updated_at) VALUES
		(1, 'Ada', 'Lovelace', 'web', 'active', 7, '2026-01-10T00:00:00Z', '2026-01-10T00:00:00Z'),
		(2, $1, 'O''Brien', $1, 'inactive', NULL, '2026-02-10T00:00:00Z', '2026-02-10T00:00:00Z'),
		(3, 'Ann', '50% off_', 'event', 'active', 8, '2026-03-10T00:00:00Z', '2026-03-10T00:00:00Z')`, evil); err != nil {
		t.Fatal(err)
	}
	day := func(s string) *time.Time {
		t, _ := time.Parse(time.DateOnly, s)
		return &t
	}
	seven, eight := int64(7), int64(8)
	for _, tc := range []struct {
		name string
		f    contacts.Filter
		ids  []string
	}{
		{"all, by created_at", contacts.Filter{Query: list.Query{SortBy: "created_at"}}, []string{"1", "2", "3"}},
		{"all, by created_at desc", contacts.Filter{Query: list.Query{SortBy: "created_at", Desc: true}}, []string{"3", "2", "1"}},
		{"hostile source", contacts.Filter{Source: evil}, []string{"2"}},
		{"hostile source, one quote off", contacts.Filter{Source: `x') OR true; --`}, nil},
		{"hostile search", contacts.Filter{Query: list.Query{Search: "o'brien"}}, []string{"2"}},
		{"hostile search matching none", contacts.Filter{Query: list.Query{Search: `' OR ''='`}}, nil},
		{"search of LIKE wildcards", contacts.Filter{Query: list.Query{Search: "% off_"}}, []string{"3"}},
		{"backslash search", contacts.Filter{Query: list.Query{Search: `\' OR true --`}}, nil},
		{"hostile status", contacts.Filter{Status: `active' OR 'a'='a`}, nil},
		{"status", contacts.Filter{Status: "inactive"}, []string{"2"}},
		{"owner", contacts.Filter{AssignedTo: &seven}, []string{"1"}},
		{"scope me", contacts.Filter{Query: list.Query{Scope: list.ScopeMe}, Caller: 8}, []string{"3"}},
		{"negative owner", contacts.Filter{Query: list.Query{Scope: list.ScopeMe}, Caller: -1}, nil},
		{"team of one", contacts.Filter{Query: list.Query{Scope: list.ScopeTeam}, Caller: 8, CallerTeam: nil}, []string{"3"}},
		{"dates", contacts.Filter{Query: list.Query{DateFrom: day("2026-02-01"), DateTo: day("2026-03-01")}}, []string{"2"}},
		{"updated since", contacts.Filter{Query: list.Query{UpdatedSince: day("2026-02-10"), SortBy: "updated_at"}}, []string{"2", "3"}},
		{"owner 8, by status", contacts.Filter{AssignedTo: &eight, Query: list.Query{SortBy: "status"}}, []string{"3"}},
	} {
		if tc.f.SortBy == "" {
			tc.f.SortBy = "name"
		}
		var out bytes.Buffer
		if err := s.ExportContacts(ctx, tc.f, nil, &out); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		var ids []string
		for _, line := range strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n") {
			if line != "" {
				ids = append(ids, strings.SplitN(line, ",", 2)[0])
			}
		}
		if diff := cmp.Diff(tc.ids, ids); diff != "" {
			t.Errorf("%s (-want +got):\n%s\n%s", tc.name, diff, out.String())
		}
	}
	var n int
	if err := d.QueryRow(ctx, `SELECT count(*) FROM contacts`).Scan(&n); err != nil || n != 3 {
		t.Fatalf("contacts after the exports: %d %v", n, err)
	}
}
