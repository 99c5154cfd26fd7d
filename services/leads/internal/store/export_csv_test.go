package store_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/opencrm/crm/pkg/list"
	"github.com/opencrm/crm/services/leads/internal/leads"
)

// TestExportFilters: the export's COPY takes the filters' values as
// literals (csvx.Inline): hostile values are only ever values — one built
// to end the literal matches the one lead holding it exactly and nothing
// else — and the table is still there.
func TestExportFilters(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d, st := newStore(t)
	const evil = `x'); DROP TABLE leads; --`
	if _, err := d.Exec(ctx, `INSERT INTO leads (id, first_name, last_name, source, status, assigned_to, created_at) VALUES
		(1, 'Ada', 'Lovelace', 'web', 'new', 7, '2026-01-10T00:00:00Z'),
		(2, $1, 'O''Brien', $1, 'contacted', NULL, '2026-02-10T00:00:00Z'),
		(3, 'Ann', '50% off_', 'event', 'new', 8, '2026-03-10T00:00:00Z')`, evil); err != nil {
		t.Fatal(err)
	}
	seven := int64(7)
	for _, tc := range []struct {
		name string
		f    leads.Filter
		ids  []string
	}{
		{"all", leads.Filter{}, []string{"1", "2", "3"}},
		{"hostile source", leads.Filter{Source: evil}, []string{"2"}},
		{"hostile source, one quote off", leads.Filter{Source: `x') OR true; --`}, nil},
		{"hostile search", leads.Filter{Query: list.Query{Search: "o'brien"}}, []string{"2"}},
		{"hostile search matching none", leads.Filter{Query: list.Query{Search: `' OR ''='`}}, nil},
		{"search of LIKE wildcards", leads.Filter{Query: list.Query{Search: "% off_"}}, []string{"3"}},
		{"backslash search", leads.Filter{Query: list.Query{Search: `\' OR true --`}}, nil},
		{"hostile status", leads.Filter{Status: `new' OR 'a'='a`}, nil},
		{"owner", leads.Filter{AssignedTo: &seven}, []string{"1"}},
		{"scope me", leads.Filter{Query: list.Query{Scope: list.ScopeMe}, CallerID: 8}, []string{"3"}},
		{"scope team", leads.Filter{Query: list.Query{Scope: list.ScopeTeam}, CallerID: 8}, []string{"3"}},
	} {
		tc.f.SortBy = "created_at"
		var out bytes.Buffer
		if err := st.Export(ctx, tc.f, nil, &out); err != nil {
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
	if err := d.QueryRow(ctx, `SELECT count(*) FROM leads`).Scan(&n); err != nil || n != 3 {
		t.Fatalf("leads after the exports: %d %v", n, err)
	}
}
