//go:build bench

package store

// What lead_search (migrations 011 and 013) and the status-led sort
// indexes (012) cost writes, against the schema without them (their down
// steps: no projection, the trigram index back on leads, no status-led
// index), in alternating rounds of the same run:
//
//	CRM_BENCH_ROWS=200000 CRM_BENCH_ROUNDS=5 go test -tags bench -run '^$' -bench SearchProjectionWrites -benchtime 1x -timeout 30m ./services/leads/internal/store/

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/opencrm/crm/pkg/db"
	"github.com/opencrm/crm/pkg/proccpu"
	"github.com/opencrm/crm/pkg/testdb"
	"github.com/opencrm/crm/services/leads/internal/leads"
	"github.com/opencrm/crm/services/leads/migrations"
)

// BenchmarkSearchProjectionWrites times, on three databases seeded alike,
// one at migration 013 (lead_search holds (id, search_text)), one with 013
// rolled back (011's 13-column projection, and 012) and one with 013, 012
// and 011 rolled back: single creates and updates through the store (4
// clients, each a create then an update of the searched name, status and
// source), the intake's batch create (CreateManyOnce, 50 leads a call) and
// an import of 5,000 rows (the COPY path). Rounds alternate between them;
// the figure is the mean throughput, target 013/010 ≥ 0.9.
func BenchmarkSearchProjectionWrites(b *testing.B) {
	ctx := context.Background()
	n := 200_000
	if v, err := strconv.Atoi(os.Getenv("CRM_BENCH_ROWS")); err == nil && v > 0 {
		n = v
	}
	// Each schema is the previous one's with its migration rolled back.
	versions := []string{"013", "012", "010"}
	down := map[string][]string{"012": {"013_search_text_only.sql"},
		"010": {"013_search_text_only.sql", "012_status_sort_indexes.sql", "011_search_projection.sql"}}
	stores := map[string]*Store{}
	for _, version := range versions {
		d := testdb.New(b, "leads", Migrate, MigrationSets...)
		for _, m := range down[version] {
			_, sql := testdb.Sections(b, migrations.FS, m)
			if _, err := d.Exec(ctx, sql); err != nil {
				b.Fatalf("%s down: %v", m, err)
			}
		}
		seedWrites(b, d, n)
		stores[version] = &Store{db: d}
	}
	const clients, perClient, batches, batchSize, importRows = 4, 150, 10, 50, 5_000
	rounds := 3
	if v, err := strconv.Atoi(os.Getenv("CRM_BENCH_ROUNDS")); err == nil && v > 0 {
		rounds = v
	}
	lead := func(name string) leads.Lead {
		return leads.Lead{FirstName: "Bench", LastName: name, Email: ptr(name + "@w.example"), Company: ptr("Acme " + name),
			Status: leads.StatusNew, Source: ptr("web"), CustomFields: map[string]any{}}
	}
	single := func(s *Store, tag string) float64 {
		start := time.Now()
		var wg sync.WaitGroup
		errs := make(chan error, clients)
		for w := 0; w < clients; w++ {
			wg.Add(1)
			go func(w int) {
				defer wg.Done()
				for i := 0; i < perClient; i++ {
					name := fmt.Sprintf("%s-%d-%d", tag, w, i)
					l, err := s.Create(ctx, lead(name))
					if err == nil {
						_, err = s.Update(ctx, l.ID, func(l *leads.Lead) error {
							l.LastName, l.Status, l.Source = name+"-u", leads.StatusContacted, ptr("event")
							return nil
						})
					}
					if err != nil {
						errs <- err
						return
					}
				}
			}(w)
		}
		wg.Wait()
		close(errs)
		if err := <-errs; err != nil {
			b.Fatal(err)
		}
		return float64(clients*perClient) / time.Since(start).Seconds()
	}
	intake := func(s *Store, tag string) float64 {
		start := time.Now()
		for i := 0; i < batches; i++ {
			keys, ls := make([]string, batchSize), make([]leads.Lead, batchSize)
			for j := range ls {
				name := fmt.Sprintf("%s-b%d-%d", tag, i, j)
				keys[j], ls[j] = name, lead(name)
			}
			if _, err := s.CreateManyOnce(ctx, keys, ls); err != nil {
				b.Fatal(err)
			}
		}
		return float64(batches*batchSize) / time.Since(start).Seconds()
	}
	imports := func(s *Store, tag string) float64 {
		row := 0
		start := time.Now()
		if _, err := s.Import(ctx, func() (ImportRow, bool, error) {
			if row++; row > importRows {
				return ImportRow{}, false, nil
			}
			name := fmt.Sprintf("%s-i%d", tag, row)
			l := lead(name)
			l.Phone = ptr(fmt.Sprintf("+1 555 %07d", row))
			return ImportRow{Row: row + 1, Lead: l}, true, nil
		}, ImportOptions{MaxSkips: 10}); err != nil {
			b.Fatal(err)
		}
		return float64(importRows) / time.Since(start).Seconds()
	}
	type sums struct{ single, intake, imports float64 }
	got := map[string]*sums{}
	load := proccpu.LoadAvg()
	b.ResetTimer()
	for _, v := range versions {
		got[v] = &sums{}
		single(stores[v], "warm"+v)
	}
	for r := 0; r < rounds; r++ {
		order := slices.Clone(versions)
		if r%2 == 1 {
			slices.Reverse(order)
		}
		for _, v := range order {
			tag := fmt.Sprintf("r%d-%s", r, v)
			got[v].single += single(stores[v], tag) / float64(rounds)
			got[v].intake += intake(stores[v], tag) / float64(rounds)
			got[v].imports += imports(stores[v], tag) / float64(rounds)
		}
	}
	b.StopTimer()
	var out strings.Builder
	fmt.Fprintf(&out, "%d leads seeded per database; %d rounds alternating; load average %s at the start, %s at the end\n\n",
		n, rounds, load, proccpu.LoadAvg())
	fmt.Fprintf(&out, "| schema | creates+updates per s (%d clients × %d) | intake batch creates per s (%d × %d) | imported rows per s (%d per import) |\n|---|---|---|---|\n",
		clients, perClient, batches, batchSize, importRows)
	for _, v := range versions {
		fmt.Fprintf(&out, "| %s | %.0f | %.0f | %.0f |\n", v, got[v].single, got[v].intake, got[v].imports)
	}
	for _, v := range versions[:2] {
		fmt.Fprintf(&out, "| %s/010 | %.2f | %.2f | %.2f |\n", v, got[v].single/got["010"].single,
			got[v].intake/got["010"].intake, got[v].imports/got["010"].imports)
	}
	fmt.Print(out.String())
	b.ReportMetric(got["013"].single/got["010"].single, "single-013/010")
	b.ReportMetric(got["013"].intake/got["010"].intake, "intake-013/010")
	b.ReportMetric(got["013"].imports/got["010"].imports, "import-013/010")
}

func ptr[T any](v T) *T { return &v }

// seedWrites fills d with n leads as the e2e benchmarks seed them (fifty
// owners, four statuses and sources, two years of creation days), settled
// (VACUUM ANALYZE).
func seedWrites(b *testing.B, d *db.DB, n int) {
	ctx := context.Background()
	for _, q := range []string{
		`INSERT INTO directory_users (id, name, email, role, active, updated_at)
			SELECT 1000 + g, 'Rep ' || chr(65 + g % 26) || g, 'rep' || g || '@crm.example', 'user', true, now()
			FROM generate_series(1, 50) g`,
		fmt.Sprintf(`INSERT INTO leads (first_name, last_name, email, phone, company, source, status,
				assigned_to, assigned_to_name, created_at)
			SELECT (ARRAY['Ann','Bob','Cid','Dora','Eve','Finn','Gus','Hana','Ivan','Jade'])[1 + g %% 10] || g,
				(ARRAY['Smith','Jones','Nguyen','Garcia','Müller','Rossi','Kowalski','Tanaka'])[1 + g %% 8],
				'lead' || g || '@corp' || (g %% 100) || '.example',
				'+1 555 ' || lpad((g %% 10000000)::text, 7, '0'),
				'Company ' || (g %% 20000) || ' Ltd',
				(ARRAY['web','referral','event','partner'])[1 + g %% 4],
				(ARRAY['new','contacted','qualified','disqualified'])[1 + g %% 4],
				1001 + g %% 50, 'Rep ' || chr(65 + (1 + g %% 50) %% 26) || (1 + g %% 50),
				now() - (g %% 730) * interval '1 day'
			FROM generate_series(1, %d) g`, n),
		`VACUUM ANALYZE leads`,
	} {
		if _, err := d.Exec(ctx, q); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := d.Exec(ctx, `VACUUM ANALYZE lead_search`); err != nil && !strings.Contains(err.Error(), "does not exist") {
		b.Fatal(err)
	}
}
