package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// seedContacts fills contacts with n rows once per process: 2,000
// companies, eight surnames (so search=smith matches n/8), dates over two
// years.
func seedContacts(b *testing.B, c *pgx.Conn, n int) {
	seedOnce(b, "contacts", func() {
		// The schema's triggers name its tables unqualified, as the service does.
		exec1(b, c, `SET search_path = contacts, public`)
		exec1(b, c, `INSERT INTO contacts.companies (name, domain) SELECT 'Company ' || g || ' Ltd', 'c' || g || '.example'
			FROM generate_series(1, 2000) g`)
		// enums is written with the values seedContactCustomFields defines
		// as enum fields after this (the trigger would find no definitions
		// yet): the same shortcut as the values themselves.
		// phone_e164 is written as the service computes it ("+1 555 0001234"
		// is +15550001234): left pending, the service's backfill would
		// rewrite every seeded row during the measurements, leaving dead
		// rows and a visibility map that sends index-only walks to the heap
		// (scope=me lists took 20 ms on a settled table, 343 ms under it).
		exec1(b, c, `ALTER TABLE contacts.contacts DISABLE TRIGGER contacts_enums`)
		exec1(b, c, fmt.Sprintf(`INSERT INTO contacts.contacts (first_name, last_name, email, phone, phone_e164, company_id, status, source,
				assigned_to, created_at, custom_fields, enums)
			SELECT (ARRAY['Ann','Bob','Cid','Dora','Eve','Finn','Gus','Hana','Ivan','Jade'])[1 + g %% 10] || g,
				(ARRAY['Smith','Jones','Nguyen','Garcia','Müller','Rossi','Kowalski','Tanaka'])[1 + g %% 8],
				'user' || g || '@mail' || (g %% 100) || '.example',
				'+1 555 ' || lpad((g %% 10000000)::text, 7, '0'),
				'+1555' || lpad((g %% 10000000)::text, 7, '0'),
				1 + g %% 2000,
				CASE WHEN g %% 5 = 0 THEN 'inactive' ELSE 'active' END,
				(ARRAY['web','referral','event','partner'])[1 + g %% 4],
				CASE WHEN g %% 3 = 0 THEN NULL ELSE 1 END,
				now() - (g %% 730) * interval '1 day',
				%s, %s
			FROM generate_series(1, %d) g`, contactFields, contactEnums, n))
		exec1(b, c, `ALTER TABLE contacts.contacts ENABLE TRIGGER contacts_enums`)
		exec1(b, c, `RESET search_path`)
		exec1(b, c, `VACUUM (ANALYZE) contacts.contacts`)
		exec1(b, c, `VACUUM (ANALYZE) contacts.contact_search`)
		exec1(b, c, `VACUUM (ANALYZE) contacts.companies`)
	})
}

// contactCase is one list request; where is its filter as plain SQL and
// order its ORDER BY, for the raw baseline (count(*) of the filter plus
// the same page), "" where none is run. Broad searches and multi-filter
// lists ("(broad)", "(multi-filter)" in the name) are judged by the ratio
// to that baseline, every other case by p95 < 50 ms, its raw time shown
// to tell the database's share from the service's.
type contactCase struct{ name, query, where, order string }

// searchSQL is the search filter on contacts as the contacts service states
// it: the contact's own fields through the trigram index, which lives on the
// contact_search projection (contacts migration 017), or its company's name.
func searchSQL(term string) string {
	p := "'%" + term + "%'"
	return "(id = ANY(ARRAY(SELECT id FROM contacts.contact_search WHERE search_text LIKE lower(" + p + "))) OR company_id = ANY(ARRAY(SELECT id FROM contacts.companies WHERE lower(name) LIKE lower(" + p + "))))"
}

// BenchmarkContacts: 1,000,000 contacts through the gateway.
//   - list: every filter and sort, and every search matching ≤ 10,000
//     rows, p95 < 50 ms; broad searches and multi-filter lists p95 ≤ 1.25 ×
//     PostgreSQL's exact count(*) of the same filter plus the same page
//     query, run here on the same data (JIT off, as the service runs them).
//   - export: the whole table as CSV vs a raw COPY TO of the same rows.
//   - import100k: 100,000 rows over HTTP ≤ 1.5 × a raw COPY of the same
//     rows into a copy of the contact table with all its indexes.
func BenchmarkContacts(b *testing.B) {
	n := benchRows()
	c := superuser(b)
	seedContacts(b, c, n)
	b.Run("list", func(b *testing.B) { benchContactList(b, c, n) })
	b.Run("export", func(b *testing.B) { benchContactExport(b, c, n) })
	b.Run("import100k", func(b *testing.B) { benchContactImport(b, c) })
}

func benchContactList(b *testing.B, c *pgx.Conn, n int) {
	adm := benchAdmin(b)
	day := time.Now().AddDate(0, 0, -30).Format(time.DateOnly)
	cases := []contactCase{
		{"no filter", "", "", ""},
		{"search name (broad)", "search=smith", searchSQL("smith"), "sort_name, id"},
		{"search + sort (broad)", "search=nguyen&sort_by=email", searchSQL("nguyen"), "lower(email), id"},
		{"status+source+sort (multi-filter)", "status=active&source=web&sort_by=created_at&sort_dir=desc",
			"status = 'active' AND source = 'web'", "created_at DESC, id DESC"},
		{"status+assigned_to+source (multi-filter)", "status=active&assigned_to=1&source=event",
			"status = 'active' AND assigned_to = 1 AND source = 'event'", "sort_name, id"},
		{"status+company_id (multi-filter)", "status=inactive&company_id=78", "status = 'inactive' AND company_id = 78", "sort_name, id"},
		{"search full name", "search=" + url.QueryEscape("dora4 garcia"), searchSQL("dora4 garcia"), "sort_name, id"},
		{"search email", "search=user12345%40", searchSQL("user12345@"), "sort_name, id"},
		{"search phone", "search=555%200012", searchSQL("555 0012"), "sort_name, id"},
		{"search company", "search=" + url.QueryEscape("company 77 "), searchSQL("company 77 "), "sort_name, id"},
		{"status", "status=inactive", "status = 'inactive'", "sort_name, id"},
		{"company_id", "company_id=78", "company_id = 78", "sort_name, id"},
		{"assigned_to", "assigned_to=1", "assigned_to = 1", "sort_name, id"},
		{"source", "source=event", "source = 'event'", "sort_name, id"},
		{"date range", "date_from=" + day + "&date_to=" + day, "", ""},
		{"scope=me", "scope=me", "", ""},
		{"scope=team", "scope=team", "", ""},
	}
	for _, key := range []string{"name", "email", "phone", "company_name", "status", "created_at"} {
		for _, dir := range []string{"asc", "desc"} {
			cases = append(cases, contactCase{"sort " + key + " " + dir, "sort_by=" + key + "&sort_dir=" + dir, "", ""})
		}
	}
	rows, missed := measureContactLists(b, c, adm, cases, "id, first_name, last_name, email, phone, mobile, job_title, company_id, company_name, status, source, created_at",
		func(lc contactCase, p95 time.Duration, ratio float64) bool {
			broad := strings.Contains(lc.name, "(broad)") || strings.Contains(lc.name, "(multi-filter)")
			return p95 < 50*time.Millisecond || (broad && ratio <= 1.25)
		})
	report(b, fmt.Sprintf("Contacts list through the gateway (%d contacts, 40 requests per case)", n),
		[]string{"case", "query", "total", "gateway p95 ms", "raw count(*) + page p95 ms", "ratio", "met"}, rows)
	note(fmt.Sprintf("Targets: broad and multi-filter cases p95 ≤ 1.25 × raw (or < 50 ms); every other case p95 < 50 ms, its raw column the database's own share. %d of %d cases missed.", missed, len(cases)))
	b.ReportMetric(float64(missed), "missed")
}

// measureContactLists runs each case through the gateway (40 requests
// after a warm-up) and, where it has a where clause, PostgreSQL's own
// count(*) plus the same 25-row page of columns (JIT off, as the service
// runs them); met judges a case by its p95 and ratio to raw (0 without
// raw). It returns the report rows and the number of cases missed.
func measureContactLists(b *testing.B, c *pgx.Conn, adm *Client, cases []contactCase, columns string,
	met func(lc contactCase, p95 time.Duration, ratio float64) bool) (rows [][]string, missed int) {
	exec1(b, c, `SET jit = off`)
	defer exec1(b, c, `RESET jit`)
	b.ResetTimer()
	defer b.StopTimer()
	for _, lc := range cases {
		var total float64
		get := func() error {
			r, err := adm.Do("GET", "/contacts?"+lc.query, nil)
			if err == nil && r.Status != 200 {
				err = fmt.Errorf("%s: %s", lc.name, r)
			}
			if err == nil {
				total, _ = r.JSON["total"].(float64)
			}
			return err
		}
		if err := get(); err != nil { // warm the path once, then measure
			b.Fatal(err)
		}
		p95 := pct(latencies(b, 40, get), 0.95)
		raw, ratio, verdict := "—", "—", "yes"
		r := 0.0
		if lc.where != "" {
			count := "SELECT count(*) FROM contacts.contacts WHERE " + lc.where
			page := "SELECT " + columns + " FROM contacts.contacts WHERE " + lc.where + " ORDER BY " + lc.order + " LIMIT 25"
			exec1(b, c, count)
			exec1(b, c, page)
			rp95 := pct(latencies(b, 40, func() error {
				if _, err := c.Exec(context.Background(), count); err != nil {
					return err
				}
				_, err := c.Exec(context.Background(), page)
				return err
			}), 0.95)
			r = float64(p95) / float64(rp95)
			raw, ratio = ms(rp95), fmt.Sprintf("%.2f", r)
		}
		if !met(lc, p95, r) {
			verdict = "no"
			missed++
		}
		rows = append(rows, []string{lc.name, "`" + lc.query + "`", fmt.Sprintf("%.0f", total), ms(p95), raw, ratio, verdict})
	}
	return rows, missed
}

func benchContactExport(b *testing.B, c *pgx.Conn, n int) {
	adm := benchAdmin(b)
	req, err := http.NewRequest("GET", adm.Base+"/contacts/export", nil)
	if err != nil {
		b.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+adm.Token)
	b.ResetTimer()
	start := time.Now()
	resp, err := adm.HTTP.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	size, err := io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	took := time.Since(start)
	if err != nil || resp.StatusCode != 200 {
		b.Fatalf("export: %d %v", resp.StatusCode, err)
	}
	start = time.Now()
	var raw countWriter
	if _, err := c.PgConn().CopyTo(context.Background(), &raw, `COPY (SELECT id, first_name, last_name, email, phone, mobile,
		job_title, company_name, address_street, address_city, address_state, address_zip, address_country, notes,
		tags, status, source, created_at, updated_at FROM contacts.contacts ORDER BY sort_name, id) TO STDOUT WITH CSV HEADER`); err != nil {
		b.Fatal(err)
	}
	rawTook := time.Since(start)
	b.StopTimer()
	report(b, fmt.Sprintf("Contacts export through the gateway (%d contacts)", n),
		[]string{"path", "MB", "seconds", "ratio"}, [][]string{
			{"GET /contacts/export", fmt.Sprint(size >> 20), fmt.Sprintf("%.2f", took.Seconds()), fmt.Sprintf("%.2f", took.Seconds()/rawTook.Seconds())},
			{"raw COPY TO STDOUT (same rows, same order)", fmt.Sprint(raw.n >> 20), fmt.Sprintf("%.2f", rawTook.Seconds()), "1"},
		})
}

type countWriter struct{ n int64 }

func (w *countWriter) Write(p []byte) (int, error) { w.n += int64(len(p)); return len(p), nil }
