package e2e

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/opencrm/crm/pkg/proccpu"
)

// importRows is the size of the import benchmark's file.
const importRows = 100_000

// importRounds is how many alternating rounds the import benchmark runs
// (CRM_BENCH_IMPORT_ROUNDS, default 3).
func importRounds() int {
	if n, err := strconv.Atoi(os.Getenv("CRM_BENCH_IMPORT_ROUNDS")); err == nil && n > 0 {
		return n
	}
	return 3
}

// benchContactImport: a 100,000-row CSV through POST /contacts/import
// against a raw COPY of the same rows into a copy of the contact table
// with all its indexes (and its rows), in alternating rounds: round 1 raw
// first, round 2 HTTP first, and so on, each round reported with the load
// average. Both sides do the same physical work: the same rows (names,
// emails, phones, tags as the import stores them, company id and name of
// the same companies, which exist before the first round so every round
// only looks them up), one transaction that commits, the import's
// gin_pending_list_limit (the import leaves the trigram merge to after
// its answer, so the raw side must not do it inside its timed COPY). Before
// each measurement both tables are back to their rows before the round,
// vacuumed, their pending lists merged (the import's background merge
// included) and a checkpoint taken, so neither side pays the other's
// deferred work. The raw side has no foreign key and no triggers (LIKE
// does not copy them); a third COPY, into contacts itself and rolled
// back, shows what those cost, so the rest is the service's.
func benchContactImport(b *testing.B, c *pgx.Conn) {
	adm := benchAdmin(b)
	exec1(b, c, `INSERT INTO contacts.companies (name) SELECT 'Import Co ' || g FROM generate_series(0, 499) g
		WHERE NOT EXISTS (SELECT 1 FROM contacts.companies WHERE name = 'Import Co ' || g)`)
	cos := map[string]int64{}
	res, err := c.Query(b.Context(), `SELECT name, min(id) FROM contacts.companies WHERE name LIKE 'Import Co %' GROUP BY name`)
	if err != nil {
		b.Fatal(err)
	}
	for res.Next() {
		var name string
		var id int64
		if err := res.Scan(&name, &id); err != nil {
			b.Fatal(err)
		}
		cos[name] = id
	}
	if res.Close(); res.Err() != nil || len(cos) != 500 {
		b.Fatalf("import companies: %v, %d found", res.Err(), len(cos))
	}

	var buf bytes.Buffer
	buf.WriteString("first_name,last_name,email,phone,company_name,status,source,tags\n")
	for i := range importRows {
		fmt.Fprintf(&buf, "Imp%d,Orted%d,imported%d@bench.test,+1 666 %07d,Import Co %d,active,csv,\"a, b\"\n", i, i, i, i, i%500)
	}
	file := buf.Bytes()
	now := time.Now().UTC()
	src := make([][]any, importRows)
	for i := range src {
		name := fmt.Sprintf("Import Co %d", i%500)
		src[i] = []any{fmt.Sprintf("Imp%d", i), fmt.Sprintf("Orted%d", i), fmt.Sprintf("imported%d@bench.test", i),
			fmt.Sprintf("+1 666 %07d", i), cos[name], name, "active", "csv", "a,b", now, now}
	}

	exec1(b, c, `DROP TABLE IF EXISTS public.bench_contacts`)
	exec1(b, c, `CREATE TABLE public.bench_contacts (LIKE contacts.contacts INCLUDING ALL)`)
	defer exec1(b, c, `DROP TABLE IF EXISTS public.bench_contacts`)
	var cols string
	if err := c.QueryRow(b.Context(), `SELECT string_agg(quote_ident(column_name), ', ' ORDER BY ordinal_position)
		FROM information_schema.columns WHERE table_schema = 'contacts' AND table_name = 'contacts' AND is_generated = 'NEVER'`).Scan(&cols); err != nil {
		b.Fatal(err)
	}
	exec1(b, c, `INSERT INTO public.bench_contacts (`+cols+`) SELECT `+cols+` FROM contacts.contacts`)
	var rawTrgm string
	if err := c.QueryRow(b.Context(), `SELECT i.indexrelid::regclass::text FROM pg_index i
		JOIN pg_class x ON x.oid = i.indexrelid JOIN pg_am a ON a.oid = x.relam
		WHERE i.indrelid = 'public.bench_contacts'::regclass AND a.amname = 'gin'`).Scan(&rawTrgm); err != nil {
		b.Fatal(err)
	}

	var httpCPU, rawCPU, wholeCPU cpuSplit
	// After each side's answer: the raw side's own trigram merge, and for
	// the import everything its answer leaves running on the contacts
	// role's backends — the background trigram merge and the reads the
	// webhooks context makes to expand its contacts.imported events.
	var rawMerge, httpAfter time.Duration
	// settle undoes a round's writes and deferred work outside the clock.
	settle := func() {
		exec1(b, c, `SELECT gin_clean_pending_list('contacts.contacts_search_trgm'::regclass)`)
		exec1(b, c, `SELECT gin_clean_pending_list($1::regclass)`, rawTrgm)
		exec1(b, c, `SET search_path = contacts, public`) // the delete triggers name tables unqualified
		exec1(b, c, `DELETE FROM contacts.contacts WHERE email LIKE 'imported%@bench.test'`)
		exec1(b, c, `RESET search_path`)
		exec1(b, c, `DELETE FROM public.bench_contacts WHERE email LIKE 'imported%@bench.test'`)
		exec1(b, c, `VACUUM contacts.contacts`)
		exec1(b, c, `VACUUM public.bench_contacts`)
		exec1(b, c, `CHECKPOINT`)
	}
	raw := func() time.Duration {
		settle()
		pid := int(c.PgConn().PID())
		before := proccpu.Of(pid)
		start := time.Now()
		tx, err := c.Begin(b.Context())
		if err != nil {
			b.Fatal(err)
		}
		defer tx.Rollback(b.Context())
		if _, err := tx.Exec(b.Context(), `SET LOCAL gin_pending_list_limit = '256MB'`); err != nil {
			b.Fatal(err)
		}
		if _, err := tx.CopyFrom(b.Context(), pgx.Identifier{"public", "bench_contacts"}, []string{"first_name", "last_name",
			"email", "phone", "company_id", "company_name", "status", "source", "tags", "created_at", "updated_at"},
			pgx.CopyFromRows(src)); err != nil {
			b.Fatal(err)
		}
		if err := tx.Commit(b.Context()); err != nil {
			b.Fatal(err)
		}
		took := time.Since(start)
		m := proccpu.Of(pid)
		rawCPU.postgres += m - before
		exec1(b, c, `SELECT gin_clean_pending_list($1::regclass)`, rawTrgm)
		rawMerge += proccpu.Of(pid) - m
		return took
	}
	// whole is the same COPY into contacts itself, rolled back: the
	// table's whole write path (its company foreign key, the totals and
	// company-name triggers), to tell the table's own cost from the
	// service's.
	whole := func() time.Duration {
		settle()
		pid := int(c.PgConn().PID())
		before := proccpu.Of(pid)
		defer func() { wholeCPU.postgres += proccpu.Of(pid) - before }()
		start := time.Now()
		tx, err := c.Begin(b.Context())
		if err != nil {
			b.Fatal(err)
		}
		defer tx.Rollback(b.Context())
		// The triggers name tables unqualified; the import sets the other two.
		if _, err := tx.Exec(b.Context(), `SET LOCAL search_path = contacts, public; SET LOCAL contacts.bulk_company_name = 'on';
			SET LOCAL gin_pending_list_limit = '256MB'`); err != nil {
			b.Fatal(err)
		}
		if _, err := tx.CopyFrom(b.Context(), pgx.Identifier{"contacts", "contacts"}, []string{"first_name", "last_name",
			"email", "phone", "company_id", "company_name", "status", "source", "tags", "created_at", "updated_at"},
			pgx.CopyFromRows(src)); err != nil {
			b.Fatal(err)
		}
		took := time.Since(start)
		if err := tx.Rollback(b.Context()); err != nil {
			b.Fatal(err)
		}
		return took
	}
	var answer *Response
	viaHTTP := func() time.Duration {
		settle()
		before := importCPU(b, c)
		start := time.Now()
		r, err := adm.Upload("/contacts/import", "file", "bench.csv", file)
		took := time.Since(start)
		answered := importCPU(b, c)
		httpCPU = httpCPU.add(answered.since(before))
		if err != nil || r.Status != 200 || r.JSON["imported"] != float64(importRows) {
			b.Fatalf("import: %v %.300s", err, r)
		}
		answer = r
		awaitImportEvents(b, c, start)
		httpAfter += importCPU(b, c).postgres - answered.postgres
		return took
	}

	var rows [][]string
	var sumHTTP, sumRaw, sumWhole time.Duration
	secs := func(d time.Duration) string { return fmt.Sprintf("%.2f", d.Seconds()) }
	b.ResetTimer()
	for round := 1; round <= importRounds(); round++ {
		var h, r, w time.Duration
		order := "raw, whole, HTTP"
		if round%2 == 1 {
			r, w, h = raw(), whole(), viaHTTP()
		} else {
			order = "HTTP, whole, raw"
			h, w, r = viaHTTP(), whole(), raw()
		}
		sumHTTP, sumRaw, sumWhole = sumHTTP+h, sumRaw+r, sumWhole+w
		rows = append(rows, []string{strconv.Itoa(round), order, secs(h), secs(r), fmt.Sprintf("%.2f", h.Seconds()/r.Seconds()),
			secs(w), fmt.Sprintf("%.2f", w.Seconds()/r.Seconds()), proccpu.LoadAvg()})
	}
	b.StopTimer()
	ratio := sumHTTP.Seconds() / sumRaw.Seconds()
	met := "yes"
	if ratio > 1.5 {
		met = "no"
	}
	rows = append(rows, []string{"all", "", secs(sumHTTP), secs(sumRaw), fmt.Sprintf("**%.2f** (≤ 1.5×: %s)", ratio, met),
		secs(sumWhole), fmt.Sprintf("%.2f", sumWhole.Seconds()/sumRaw.Seconds()), ""})
	report(b, fmt.Sprintf("Contacts import of 100,000 rows (%d MB) through the gateway, alternating rounds", len(file)>>20),
		[]string{"round", "order", "POST /contacts/import s", "raw COPY s", "ratio", "whole-table COPY s", "whole / raw", "load average after"}, rows)
	note("Raw: one committed COPY of the same rows into `CREATE TABLE … (LIKE contacts.contacts INCLUDING ALL)` holding the table's rows, with the import's gin_pending_list_limit (the target's baseline). " +
		"Whole table: the same COPY into contacts itself (foreign key, totals and company-name triggers too), rolled back. The import's answer: " +
		fmt.Sprintf("encoding %v, delimiter %q, ignored %v", answer.JSON["encoding"], answer.JSON["delimiter"], answer.JSON["ignored_columns"]))
	n := time.Duration(importRounds())
	note(fmt.Sprintf("CPU per round (from /proc, so the machine's load barely moves it): raw COPY %s of PostgreSQL, "+
		"whole-table COPY %s; the import %s (PostgreSQL backends of the contacts role %s, contacts service %s, gateway %s), "+
		"%.2f× the raw CPU.", cpuSecs(rawCPU.postgres/n), cpuSecs(wholeCPU.postgres/n), cpuSecs(httpCPU.total()/n),
		cpuSecs(httpCPU.postgres/n), cpuSecs(httpCPU.service/n), cpuSecs(httpCPU.gateway/n),
		httpCPU.total().Seconds()/rawCPU.postgres.Seconds()))
	note(fmt.Sprintf("PostgreSQL CPU per round after the answers: the import's background trigram merge and the by-id reads "+
		"of its 100 contacts.imported events (webhooks expands them into 100,000 contact.created) %s; the raw side's merge %s. "+
		"PostgreSQL CPU, import to its answer / raw COPY: **%.2f**; with the events' reads and each side's merge: **%.2f**.",
		cpuSecs(httpAfter/n), cpuSecs(rawMerge/n), httpCPU.postgres.Seconds()/rawCPU.postgres.Seconds(),
		(httpCPU.postgres+httpAfter).Seconds()/(rawCPU.postgres+rawMerge).Seconds()))
	b.ReportMetric(ratio, "x-raw-copy")
	// Leave the tables as they were for the other benchmarks.
	settle()
	exec1(b, c, `SET search_path = contacts, public`)
	exec1(b, c, `DELETE FROM contacts.companies WHERE name LIKE 'Import Co %'`)
	exec1(b, c, `RESET search_path`)
}

// awaitImportEvents waits until the webhooks context has stored the
// contact.created events it expands an import's contacts.imported events
// into (so their reads on the contacts role's backends are over before
// the next measurement starts) and the contacts service's background
// trigram merge has ended.
func awaitImportEvents(b *testing.B, c *pgx.Conn, since time.Time) {
	b.Helper()
	deadline := time.Now().Add(5 * time.Minute)
	for {
		var events int
		var merging bool
		if err := c.QueryRow(b.Context(), `SELECT (SELECT count(*) FROM webhooks.events WHERE source = 'contacts'
				AND type = 'contact.created' AND part > 0 AND stored_at >= $1),
			EXISTS (SELECT 1 FROM pg_stat_activity WHERE usename = 'crm_contacts' AND state <> 'idle'
				AND query LIKE '%gin_clean_pending_list%')`, since).Scan(&events, &merging); err != nil {
			b.Fatal(err)
		}
		if events >= importRows && !merging {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("import events: %d of %d contact.created stored after 5 minutes (merging: %v)", events, importRows, merging)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// cpuSplit is CPU time spent on the import by each process involved.
type cpuSplit struct{ postgres, service, gateway time.Duration }

func (a cpuSplit) add(b cpuSplit) cpuSplit {
	return cpuSplit{a.postgres + b.postgres, a.service + b.service, a.gateway + b.gateway}
}

func (a cpuSplit) since(b cpuSplit) cpuSplit {
	return cpuSplit{a.postgres - b.postgres, a.service - b.service, a.gateway - b.gateway}
}

func (a cpuSplit) total() time.Duration { return a.postgres + a.service + a.gateway }

// importCPU reads the CPU used so far by the contacts service, the
// gateway and the PostgreSQL backends the contacts service holds open in
// the stack's database (its pool keeps them across the import).
func importCPU(b *testing.B, c *pgx.Conn) cpuSplit {
	b.Helper()
	rows, err := c.Query(b.Context(), `SELECT pid FROM pg_stat_activity WHERE usename = 'crm_contacts' AND datname = current_database()`)
	if err != nil {
		b.Fatal(err)
	}
	pids, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	if err != nil {
		b.Fatal(err)
	}
	return cpuSplit{postgres: proccpu.Sum(pids), service: proccpu.Of(stack.Pid("contacts")), gateway: proccpu.Of(stack.Pid("gateway"))}
}

func cpuSecs(d time.Duration) string { return fmt.Sprintf("%.2f s", d.Seconds()) }
