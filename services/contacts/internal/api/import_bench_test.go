//go:build bench

package api_test

// The import of 100,000 rows against a raw COPY of the same rows, side by
// side in alternating rounds, in PostgreSQL CPU time (docs/benchmarks.md):
//
//	CRM_BENCH_ROWS=1000 go test -tags bench -run '^$' -bench '^BenchmarkImport$' -benchtime 1x -timeout 30m ./internal/api/

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/opencrm/crm/pkg/proccpu"
)

// BenchmarkImport: POST /contacts/import of 100,000 rows over the
// service's handler against one committed COPY of exactly the rows the
// import stores (same names, emails, phones, tags, company ids and names;
// the 500 companies exist before round 1, so every round only looks them
// up) into CREATE TABLE … (LIKE contacts INCLUDING ALL) holding the
// table's rows, with the import's gin_pending_list_limit. Rounds alternate
// (raw first, then the import first). Before each measurement both tables
// are back to their rows, vacuumed, their GIN pending lists merged and a
// checkpoint taken, outside the measurement.
//
// The measure is the CPU time of the PostgreSQL backends (from /proc:
// the server is local), which the machine's load barely moves: the raw
// connection's for the COPY and its commit; the service pool's for the
// import, from the request to its answer (every statement of the import,
// its outbox events written), plus what its events cost the service
// afterwards: the webhooks context expands each contacts.imported event by
// reading its 1,000 contacts through GET /internal/contacts/by-id, done
// here through the handler after the answer. Each side's deferred trigram
// merge (gin_clean_pending_list: the import starts it in the background
// after commit, the raw side runs it itself) is measured apart and shown
// in a second ratio.
func BenchmarkImport(b *testing.B) {
	e := newEnv(b)
	seed(b, e, benchImportBase())
	ctx := context.Background()
	u, err := url.Parse(e.db.Config().ConnString())
	if err != nil {
		b.Fatal(err)
	}
	v := u.Query()
	v.Set("application_name", "bench-raw")
	v.Set("search_path", "contacts,public") // the triggers name tables unqualified
	u.RawQuery = v.Encode()
	c, err := pgx.Connect(ctx, u.String())
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close(context.Background())
	exec := func(sql string, args ...any) {
		b.Helper()
		if _, err := c.Exec(ctx, sql, args...); err != nil {
			b.Fatalf("%s: %v", sql, err)
		}
	}

	exec(`INSERT INTO companies (name) SELECT 'Import Co ' || g FROM generate_series(0, 499) g`)
	rows, err := c.Query(ctx, `SELECT name, id FROM companies WHERE name LIKE 'Import Co %'`)
	if err != nil {
		b.Fatal(err)
	}
	cos := map[string]int64{}
	var name string
	var id int64
	if _, err := pgx.ForEachRow(rows, []any{&name, &id}, func() error { cos[name] = id; return nil }); err != nil || len(cos) != 500 {
		b.Fatalf("companies: %v, %d", err, len(cos))
	}
	const n = 100_000
	var file bytes.Buffer
	file.WriteString("first_name,last_name,email,phone,company_name,status,source,tags\n")
	now := time.Now().UTC()
	src := make([][]any, n)
	for i := range n {
		co := fmt.Sprintf("Import Co %d", i%500)
		fmt.Fprintf(&file, "Imp%d,Orted%d,imported%d@bench.test,+1 666 %07d,%s,active,csv,\"a, b\"\n", i, i, i, i, co)
		src[i] = []any{fmt.Sprintf("Imp%d", i), fmt.Sprintf("Orted%d", i), fmt.Sprintf("imported%d@bench.test", i),
			fmt.Sprintf("+1 666 %07d", i), cos[co], co, "active", "csv", "a,b", now, now}
	}

	exec(`CREATE TABLE public.bench_contacts (LIKE contacts INCLUDING ALL)`)
	var cols, rawTrgm string
	if err := c.QueryRow(ctx, `SELECT string_agg(quote_ident(column_name), ', ' ORDER BY ordinal_position)
		FROM information_schema.columns WHERE table_schema = 'contacts' AND table_name = 'contacts' AND is_generated = 'NEVER'`).Scan(&cols); err != nil {
		b.Fatal(err)
	}
	exec(`INSERT INTO public.bench_contacts (` + cols + `) SELECT ` + cols + ` FROM contacts`)
	if err := c.QueryRow(ctx, `SELECT i.indexrelid::regclass::text FROM pg_index i
		JOIN pg_class x ON x.oid = i.indexrelid JOIN pg_am a ON a.oid = x.relam
		WHERE i.indrelid = 'public.bench_contacts'::regclass AND a.amname = 'gin'`).Scan(&rawTrgm); err != nil {
		b.Fatal(err)
	}
	rawPID := int(c.PgConn().PID())
	poolCPU := func() time.Duration {
		rows, err := c.Query(ctx, `SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()`)
		if err != nil {
			b.Fatal(err)
		}
		pids, err := pgx.CollectRows(rows, pgx.RowTo[int32])
		if err != nil {
			b.Fatal(err)
		}
		return proccpu.Sum(pids)
	}
	// merge merges an index's pending list on the raw connection and
	// returns that connection's CPU for it. For the import's index it
	// first waits for the import's own background merge to finish.
	merge := func(index string) time.Duration {
		before := proccpu.Of(rawPID)
		exec(`SELECT gin_clean_pending_list($1::regclass)`, index)
		return proccpu.Of(rawPID) - before
	}
	settle := func() {
		merge("contacts.contacts_search_trgm")
		merge(rawTrgm)
		exec(`DELETE FROM contacts WHERE email LIKE 'imported%@bench.test'`)
		exec(`DELETE FROM public.bench_contacts WHERE email LIKE 'imported%@bench.test'`)
		exec(`DELETE FROM outbox`)
		exec(`VACUUM contacts`)
		exec(`VACUUM public.bench_contacts`)
		exec(`CHECKPOINT`)
	}
	type side struct{ wall, cpu, merge, events time.Duration }
	raw := func() side {
		settle()
		before, start := proccpu.Of(rawPID), time.Now()
		if err := pgx.BeginFunc(ctx, c, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, `SET LOCAL gin_pending_list_limit = '256MB'`); err != nil {
				return err
			}
			_, err := tx.CopyFrom(ctx, pgx.Identifier{"public", "bench_contacts"}, []string{"first_name", "last_name",
				"email", "phone", "company_id", "company_name", "status", "source", "tags", "created_at", "updated_at"},
				pgx.CopyFromRows(src))
			return err
		}); err != nil {
			b.Fatal(err)
		}
		s := side{wall: time.Since(start), cpu: proccpu.Of(rawPID) - before}
		s.merge = merge(rawTrgm)
		return s
	}
	// expand reads the imported contacts as the webhooks context does
	// for each contacts.imported event: one internal by-id call per event.
	expand := func() int {
		rows, err := c.Query(ctx, `SELECT payload->'ids' FROM outbox WHERE type = 'contacts.imported' ORDER BY id`)
		if err != nil {
			b.Fatal(err)
		}
		lists, err := pgx.CollectRows(rows, pgx.RowTo[[]int64])
		if err != nil {
			b.Fatal(err)
		}
		read := 0
		for _, ids := range lists {
			parts := make([]string, len(ids))
			for i, id := range ids {
				parts[i] = strconv.FormatInt(id, 10)
			}
			r := e.internal(b, http.MethodGet, "/internal/contacts/by-id?ids="+strings.Join(parts, ","), "", nil)
			if r.Status != 200 {
				b.Fatalf("by-id: %d %.300s", r.Status, r.Raw)
			}
			read += len(r.Body["data"].([]any))
		}
		return read
	}
	imp := func() side {
		settle()
		before, start := poolCPU(), time.Now()
		r := e.upload(b, e.admin, "file", "bench.csv", file.Bytes())
		s := side{wall: time.Since(start), cpu: poolCPU() - before}
		if r.Status != 200 || r.Body["imported"] != float64(n) {
			b.Fatalf("import: %d %.300s", r.Status, r.Raw)
		}
		// The background merge: started after commit, waited for until
		// it has run and ended.
		for deadline := time.Now().Add(time.Minute); ; {
			var done bool
			if err := c.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_stat_activity WHERE pid <> pg_backend_pid()
				AND query LIKE '%gin_clean_pending_list%' AND query_start >= $1 AND state = 'idle')`, start).Scan(&done); err != nil {
				b.Fatal(err)
			}
			if done {
				break
			}
			if time.Now().After(deadline) {
				b.Fatal("the import's trigram merge did not run")
			}
			time.Sleep(10 * time.Millisecond)
		}
		s.merge = poolCPU() - before - s.cpu
		before = poolCPU()
		if got := expand(); got != n {
			b.Fatalf("events expanded to %d contacts, want %d", got, n)
		}
		s.events = poolCPU() - before
		return s
	}

	rounds := 3
	if v, err := strconv.Atoi(os.Getenv("CRM_BENCH_IMPORT_ROUNDS")); err == nil && v > 0 {
		rounds = v
	}
	var table strings.Builder
	fmt.Fprintf(&table, "import of %d rows (%d MB) vs raw COPY, %d rounds; table holds %d contacts; load average at start %s\n",
		n, file.Len()>>20, rounds, benchImportBase(), proccpu.LoadAvg())
	fmt.Fprintf(&table, "| round | order | import s | raw s | import PG CPU s | its events' reads PG CPU s | raw PG CPU s | CPU ratio (import + events) / raw | merge CPU import / raw s |\n|---|---|---|---|---|---|---|---|---|\n")
	var si, sr side
	b.ResetTimer()
	for round := 1; round <= rounds; round++ {
		var i, r side
		order := "raw, import"
		if round%2 == 1 {
			r, i = raw(), imp()
		} else {
			order = "import, raw"
			i, r = imp(), raw()
		}
		si = side{si.wall + i.wall, si.cpu + i.cpu, si.merge + i.merge, si.events + i.events}
		sr = side{sr.wall + r.wall, sr.cpu + r.cpu, sr.merge + r.merge, 0}
		fmt.Fprintf(&table, "| %d | %s | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f / %.2f |\n", round, order, i.wall.Seconds(), r.wall.Seconds(),
			i.cpu.Seconds(), i.events.Seconds(), r.cpu.Seconds(), (i.cpu+i.events).Seconds()/r.cpu.Seconds(), i.merge.Seconds(), r.merge.Seconds())
	}
	b.StopTimer()
	ratio := (si.cpu + si.events).Seconds() / sr.cpu.Seconds()
	fmt.Fprintf(&table, "| all | | %.2f | %.2f | %.2f | %.2f | %.2f | **%.2f** | %.2f / %.2f |\n", si.wall.Seconds(), sr.wall.Seconds(),
		si.cpu.Seconds(), si.events.Seconds(), sr.cpu.Seconds(), ratio, si.merge.Seconds(), sr.merge.Seconds())
	fmt.Fprintf(&table, "\nPostgreSQL CPU, import and its events' reads / raw COPY: %.2f (target ≤ 1.5); the import alone: %.2f; "+
		"with each side's trigram merge: %.2f; wall (import alone): %.2f; load average at end %s\n",
		ratio, si.cpu.Seconds()/sr.cpu.Seconds(), (si.cpu+si.events+si.merge).Seconds()/(sr.cpu+sr.merge).Seconds(),
		si.wall.Seconds()/sr.wall.Seconds(), proccpu.LoadAvg())
	report(b, "import vs raw COPY", table.String())
	b.ReportMetric(ratio, "cpu-x-raw-copy")
}

// benchImportBase is how many contacts the table holds before the import
// (CRM_BENCH_ROWS, default 1,000 as the e2e benchmark).
func benchImportBase() int {
	if n, err := strconv.Atoi(os.Getenv("CRM_BENCH_ROWS")); err == nil && n > 0 {
		return n
	}
	return 1000
}
