package e2e

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
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
// does not copy them): the import's COPY pays its company foreign key
// check and the totals trigger on top.
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
		return time.Since(start)
	}
	var answer *Response
	viaHTTP := func() time.Duration {
		settle()
		start := time.Now()
		r, err := adm.Upload("/contacts/import", "file", "bench.csv", file)
		took := time.Since(start)
		if err != nil || r.Status != 200 || r.JSON["imported"] != float64(importRows) {
			b.Fatalf("import: %v %.300s", err, r)
		}
		answer = r
		return took
	}

	var rows [][]string
	var sumHTTP, sumRaw time.Duration
	b.ResetTimer()
	for round := 1; round <= importRounds(); round++ {
		var h, r time.Duration
		order := "raw, HTTP"
		if round%2 == 1 {
			r, h = raw(), viaHTTP()
		} else {
			order = "HTTP, raw"
			h, r = viaHTTP(), raw()
		}
		sumHTTP += h
		sumRaw += r
		load, _ := os.ReadFile("/proc/loadavg")
		rows = append(rows, []string{strconv.Itoa(round), order, fmt.Sprintf("%.2f", h.Seconds()), fmt.Sprintf("%.2f", r.Seconds()),
			fmt.Sprintf("%.2f", h.Seconds()/r.Seconds()), strings.Join(strings.Fields(string(load))[:3], " ")})
	}
	b.StopTimer()
	ratio := sumHTTP.Seconds() / sumRaw.Seconds()
	met := "yes"
	if ratio > 1.5 {
		met = "no"
	}
	rows = append(rows, []string{"all", "", fmt.Sprintf("%.2f", sumHTTP.Seconds()), fmt.Sprintf("%.2f", sumRaw.Seconds()),
		fmt.Sprintf("**%.2f** (≤ 1.5×: %s)", ratio, met), ""})
	report(b, fmt.Sprintf("Contacts import of 100,000 rows (%d MB) through the gateway, alternating rounds", len(file)>>20),
		[]string{"round", "order", "POST /contacts/import s", "raw COPY s", "ratio", "load average after"}, rows)
	note("Raw: one committed COPY of the same rows into `CREATE TABLE … (LIKE contacts.contacts INCLUDING ALL)` holding the table's rows, with the import's gin_pending_list_limit. The import's answer: " +
		fmt.Sprintf("encoding %v, delimiter %q, ignored %v", answer.JSON["encoding"], answer.JSON["delimiter"], answer.JSON["ignored_columns"]))
	b.ReportMetric(ratio, "x-raw-copy")
	// Leave the tables as they were for the other benchmarks.
	settle()
	exec1(b, c, `SET search_path = contacts, public`)
	exec1(b, c, `DELETE FROM contacts.companies WHERE name LIKE 'Import Co %'`)
	exec1(b, c, `RESET search_path`)
}
