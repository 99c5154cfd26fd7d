//go:build bench

package store

// What contact_search (migrations 016 and 017) costs writes, against the
// schema without it (their down steps: no projection, the trigram index
// back on contacts), in alternating rounds of the same run:
//
//	CRM_BENCH_ROWS=200000 CRM_BENCH_ROUNDS=3 go test -tags bench -run '^$' -bench SearchProjectionWrites -benchtime 1x -timeout 30m ./internal/store/

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/opencrm/crm/pkg/db"
	"github.com/opencrm/crm/pkg/proccpu"
	"github.com/opencrm/crm/pkg/testdb"
	"github.com/opencrm/crm/services/contacts/internal/contacts"
	"github.com/opencrm/crm/services/contacts/migrations"
)

// BenchmarkSearchProjectionWrites times, on two databases seeded alike,
// one at migration 017 and one with 017 and 016 rolled back: single creates and
// updates through the store (4 clients, each a create then an update of
// the searched name and of status and source), edits of seeded contacts
// that leave the searched fields alone, and an import of 5,000 rows (the
// COPY path). Rounds alternate between the two; the figure is
// the mean throughput, target 017/015 ≥ 0.9.
func BenchmarkSearchProjectionWrites(b *testing.B) {
	ctx := context.Background()
	n := 200_000
	if v, err := strconv.Atoi(os.Getenv("CRM_BENCH_ROWS")); err == nil && v > 0 {
		n = v
	}
	_, down17 := testdb.Sections(b, migrations.FS, "017_search_text_only.sql")
	_, down16 := testdb.Sections(b, migrations.FS, "016_search_projection.sql")
	stores := map[string]*Store{}
	for _, version := range []string{"017", "015"} {
		d := testdb.New(b, Schema, Migrate, MigrationSets...)
		if version == "015" {
			for _, down := range []string{down17, down16} {
				if _, err := d.Exec(ctx, down); err != nil {
					b.Fatal(err)
				}
			}
		}
		seedWrites(b, d, n)
		stores[version] = &Store{db: d, log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	}
	const clients, perClient, importRows = 4, 150, 5_000
	rounds := 3
	if v, err := strconv.Atoi(os.Getenv("CRM_BENCH_ROUNDS")); err == nil && v > 0 {
		rounds = v
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
					c, err := s.CreateContact(ctx, contacts.Contact{FirstName: "Bench", LastName: name, Email: ptr(name + "@w.example"),
						Status: contacts.StatusActive, Source: ptr("web"), CustomFields: map[string]any{}})
					if err == nil {
						_, err = s.UpdateContact(ctx, c.ID, func(c *contacts.Contact) error {
							c.LastName, c.Status, c.Source = name+"-u", contacts.StatusInactive, ptr("event")
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
	// edits updates seeded contacts (spread over the table, each once per
	// run) without touching a searched field: status, source and
	// updated_at change, so the projection's row may be updated in place
	// (HOT) where its page has room.
	next := map[*Store]int64{}
	edits := func(s *Store) float64 {
		start := time.Now()
		var wg sync.WaitGroup
		errs := make(chan error, clients)
		base := next[s]
		next[s] += clients * perClient
		for w := 0; w < clients; w++ {
			wg.Add(1)
			go func(w int) {
				defer wg.Done()
				for i := 0; i < perClient; i++ {
					// A stride through the seeded ids: each edit on another page.
					id := 1 + (base+int64(w*perClient+i))*97%int64(n)
					if _, err := s.UpdateContact(ctx, id, func(c *contacts.Contact) error {
						c.Status, c.Source = contacts.StatusInactive, ptr("partner")
						return nil
					}); err != nil {
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
	imports := func(s *Store, tag string) float64 {
		rows := make([]contacts.ImportRow, importRows)
		for i := range rows {
			name := fmt.Sprintf("%s-%d", tag, i)
			rows[i] = contacts.ImportRow{Row: i + 2, Contact: contacts.Contact{FirstName: "Imp", LastName: name,
				Email: ptr(name + "@i.example"), Phone: ptr(fmt.Sprintf("+1 555 %07d", i)), Status: contacts.StatusActive}}
		}
		done := false
		start := time.Now()
		if _, errs, err := s.Import(ctx, func() ([]contacts.ImportRow, error) {
			if done {
				return nil, nil
			}
			done = true
			return rows, nil
		}, false); err != nil || len(errs) > 0 {
			b.Fatal(err, errs)
		}
		return float64(importRows) / time.Since(start).Seconds()
	}
	type sums struct{ single, edits, imports float64 }
	got := map[string]*sums{"017": {}, "015": {}}
	load := proccpu.LoadAvg()
	b.ResetTimer()
	for _, v := range []string{"017", "015"} {
		single(stores[v], "warm"+v)
	}
	for r := 0; r < rounds; r++ {
		order := []string{"017", "015"}
		if r%2 == 1 {
			order = []string{"015", "017"}
		}
		for _, v := range order {
			tag := fmt.Sprintf("r%d-%s", r, v)
			got[v].single += single(stores[v], tag) / float64(rounds)
			got[v].edits += edits(stores[v]) / float64(rounds)
			got[v].imports += imports(stores[v], tag) / float64(rounds)
		}
	}
	b.StopTimer()
	var out strings.Builder
	fmt.Fprintf(&out, "%d contacts seeded per database; %d rounds alternating; load average %s at the start, %s at the end\n\n",
		n, rounds, load, proccpu.LoadAvg())
	fmt.Fprintf(&out, "| schema | creates+updates per s (%d clients × %d) | edits of seeded contacts per s (no searched field) | imported rows per s (%d per import) |\n|---|---|---|---|\n",
		clients, perClient, importRows)
	for _, v := range []string{"017", "015"} {
		fmt.Fprintf(&out, "| %s | %.0f | %.0f | %.0f |\n", v, got[v].single, got[v].edits, got[v].imports)
	}
	fmt.Fprintf(&out, "| 017/015 | %.2f | %.2f | %.2f |\n", got["017"].single/got["015"].single, got["017"].edits/got["015"].edits,
		got["017"].imports/got["015"].imports)
	fmt.Print(out.String())
	b.ReportMetric(got["017"].single/got["015"].single, "single-017/015")
	b.ReportMetric(got["017"].edits/got["015"].edits, "edit-017/015")
	b.ReportMetric(got["017"].imports/got["015"].imports, "import-017/015")
}

// seedWrites fills d with n contacts spread over 1,000 companies, settled
// (VACUUM ANALYZE), as BenchmarkListStatements seeds them.
func seedWrites(b *testing.B, d *db.DB, n int) {
	ctx := context.Background()
	for _, q := range []string{
		`INSERT INTO companies (name, domain) SELECT 'Company ' || g, 'c' || g || '.test' FROM generate_series(1, 1000) g`,
		fmt.Sprintf(`INSERT INTO contacts (first_name, last_name, email, phone, mobile, company_id, status, source,
				assigned_to, created_at, updated_at)
			SELECT (ARRAY['Ada','Alan','Grace','Linus','Barbara','Ken','Dennis','Margaret','Edsger','Donald'])[1 + g %% 10],
				'Surname' || (g %% 2000), 'person' || g || '@example' || (g %% 97) || '.test',
				'+1 555 ' || lpad((g %% 10000000)::text, 7, '0'), CASE WHEN g %% 3 = 0 THEN '+44 77 ' || g END,
				CASE WHEN g %% 4 <> 0 THEN 1 + g %% 1000 END,
				CASE WHEN g %% 5 = 0 THEN 'inactive' ELSE 'active' END,
				(ARRAY['web','referral','event','ads'])[1 + g %% 4],
				1 + g %% 50, timestamptz '2024-01-01' + (g || ' minutes')::interval, now()
			FROM generate_series(1, %d) g`, n),
		`VACUUM ANALYZE contacts`,
		`VACUUM ANALYZE companies`,
	} {
		if _, err := d.Exec(ctx, q); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := d.Exec(ctx, `VACUUM ANALYZE contact_search`); err != nil && !strings.Contains(err.Error(), "does not exist") {
		b.Fatal(err)
	}
}
