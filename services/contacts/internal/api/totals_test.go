package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"

	"github.com/opencrm/crm/pkg/contract/contactsapi"
	"github.com/opencrm/crm/services/contacts/internal/contacts"
)

// totalCases pairs a list query with the count(*) its total must equal.
// The caller is userID (team 10 with adminID).
var totalCases = []struct {
	query, where string
}{
	{"", "true"},
	{"scope=company", "true"},
	{"status=active", "status = 'active'"},
	{"status=inactive", "status = 'inactive'"},
	{"source=web", "source = 'web'"},
	{"source=event", "source = 'event'"},
	{"assigned_to=2", "assigned_to = 2"},
	{"assigned_to=3", "assigned_to = 3"},
	{"scope=me", "assigned_to = 2"},
	{"scope=team", "assigned_to IN (1, 2)"},
	{"company_id=%[1]d", "company_id = %[1]d"},
	{"company_id=%[2]d", "company_id = %[2]d"},
	{"status=inactive&assigned_to=2", "status = 'inactive' AND assigned_to = 2"},
	{"scope=me&source=web", "assigned_to = 2 AND source = 'web'"},
	{"search=navy", "company_name = 'Navy'"},
}

// wantTotals checks every totalCases query's total against count(*).
func (e *env) wantTotals(t *testing.T, phase string, acme, navy int64) {
	t.Helper()
	for _, tc := range totalCases {
		q, where := tc.query, tc.where
		if strings.Contains(q, "%[") {
			q, where = fmt.Sprintf(q, acme, navy), fmt.Sprintf(where, acme, navy)
		}
		r := e.do(t, "GET", "/contacts?per_page=1&"+q, e.user, nil)
		wantStatus(t, r, 200)
		want := e.count(t, `SELECT count(*) FROM contacts WHERE `+where)
		if got := int(r.Body["total"].(float64)); got != want {
			t.Errorf("%s: /contacts?%s total %d, want %d", phase, q, got, want)
		}
	}
}

// TestTotalsStayExact drives every write path (API create, update, delete,
// internal create, import, company rename and delete, plain SQL including
// the foreign key's ON DELETE SET NULL) and checks after each that the
// counter-backed totals equal count(*), before and after compaction.
func TestTotalsStayExact(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	st := e.store
	acme := id(t, e.do(t, "POST", "/companies", e.admin, map[string]any{"name": "Acme"}))
	navy := id(t, e.do(t, "POST", "/companies", e.admin, map[string]any{"name": "Navy"}))
	e.wantTotals(t, "empty", acme, navy)

	var ids []int64
	for i, c := range []map[string]any{
		{"status": "active", "source": "web", "assigned_to": 2, "company_id": acme},
		{"status": "inactive", "source": "web", "assigned_to": 2},
		{"status": "inactive", "source": "event", "assigned_to": 3, "company_id": navy},
		{"source": "event", "assigned_to": 1, "company_id": acme},
		{},
	} {
		c["first_name"], c["last_name"] = "P", fmt.Sprintf("Person%d", i)
		r := e.do(t, "POST", "/contacts", e.admin, c)
		wantStatus(t, r, 201)
		ids = append(ids, id(t, r))
	}
	e.wantTotals(t, "created", acme, navy)

	wantStatus(t, e.do(t, "PUT", fmt.Sprintf("/contacts/%d", ids[0]), e.admin, map[string]any{
		"first_name": "P", "last_name": "Moved", "status": "inactive", "source": "event", "assigned_to": 3, "company_id": navy}), 200)
	wantStatus(t, e.do(t, "PUT", fmt.Sprintf("/contacts/%d", ids[4]), e.admin, map[string]any{
		"first_name": "P", "last_name": "Owned", "assigned_to": 2, "company_id": acme}), 200)
	e.wantTotals(t, "updated", acme, navy)

	wantStatus(t, e.do(t, "DELETE", fmt.Sprintf("/contacts/%d", ids[1]), e.admin, nil), 200)
	wantStatus(t, e.internal(t, "POST", contactsapi.PathContacts, "key-1", map[string]any{
		"first_name": "In", "last_name": "Ternal", "source": "web", "assigned_to": 2}), 201)
	e.wantTotals(t, "deleted and internal", acme, navy)

	file := "first_name,last_name,email,company_name,status,source\n" +
		"I1,L,i1@x.test,ACME,inactive,web\nI2,L,i2@x.test,navy,,event\nI3,L,i3@x.test,New Co,,\nI4,L,,,,web\n"
	r := e.upload(t, e.admin, "file", "c.csv", []byte(file))
	wantStatus(t, r, 200)
	if r.Body["imported"] != 4.0 {
		t.Fatalf("import %s", r.Raw)
	}
	e.wantTotals(t, "imported", acme, navy)

	if err := st.CompactCounts(ctx); err != nil {
		t.Fatal(err)
	}
	if n := e.count(t, `SELECT count(*) FROM (SELECT dim, val FROM contact_counts GROUP BY dim, val HAVING count(*) > 1) k`); n != 0 {
		t.Errorf("%d keys still have several rows after compaction", n)
	}
	e.wantTotals(t, "compacted", acme, navy)

	wantStatus(t, e.do(t, "PUT", fmt.Sprintf("/companies/%d", navy), e.admin, map[string]any{"name": "Navy"}), 200)
	wantStatus(t, e.do(t, "PUT", fmt.Sprintf("/companies/%d", acme), e.admin, map[string]any{"name": "Acme Renamed"}), 200)
	wantStatus(t, e.do(t, "DELETE", fmt.Sprintf("/companies/%d", navy), e.admin, nil), 200)
	e.wantTotals(t, "company renamed and deleted", acme, navy)

	// Writes that bypass the API: a bulk insert, the FK's SET NULL, a
	// bulk update and delete, and a truncate.
	for _, sql := range []string{
		`INSERT INTO contacts (first_name, last_name, status, source, assigned_to, company_id)
			SELECT 'G', 'S' || g, CASE WHEN g % 3 = 0 THEN 'inactive' ELSE 'active' END,
				(ARRAY['web', 'event', NULL])[1 + g % 3], 1 + g % 4, ` + fmt.Sprint(acme) + ` FROM generate_series(1, 50) g`,
		`DELETE FROM companies WHERE id = ` + fmt.Sprint(acme),
		`UPDATE contacts SET status = 'inactive', assigned_to = NULL WHERE last_name LIKE 'S1%'`,
		`DELETE FROM contacts WHERE last_name LIKE 'S2%'`,
	} {
		if _, err := e.db.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
		e.wantTotals(t, sql[:20], acme, navy)
	}
	if err := st.CompactCounts(ctx); err != nil {
		t.Fatal(err)
	}
	e.wantTotals(t, "compacted again", acme, navy)
	if _, err := e.db.Exec(ctx, `TRUNCATE contacts CASCADE`); err != nil {
		t.Fatal(err)
	}
	e.wantTotals(t, "truncated", acme, navy)
}

// TestDeepPages checks pages cut by the id-first query (offset ≥ 500) and
// search pages against the same order computed by SQL.
func TestDeepPages(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	if _, err := e.db.Exec(ctx, `INSERT INTO companies (name) VALUES ('Zeta Corp'), ('Alpha Corp')`); err != nil {
		t.Fatal(err)
	}
	if _, err := e.db.Exec(ctx, `INSERT INTO contacts (first_name, last_name, email, phone, status, company_id, assigned_to)
		SELECT (ARRAY['Ann', 'bob', 'Cy'])[1 + g % 3], 'Name' || (g % 37), CASE WHEN g % 5 <> 0 THEN 'p' || g || '@x.test' END,
			CASE WHEN g % 7 <> 0 THEN '+1 ' || (g % 50) END, CASE WHEN g % 4 = 0 THEN 'inactive' ELSE 'active' END,
			(SELECT id FROM companies ORDER BY id OFFSET g % 3 LIMIT 1), 2
		FROM generate_series(1, 1300) g`); err != nil {
		t.Fatal(err)
	}
	order := map[string]string{
		"name": "sort_name", "email": "lower(email)", "phone": "phone", "company_name": "lower(company_name)",
		"status": "status", "created_at": "created_at",
	}
	for _, tc := range []struct{ query, where string }{
		{"page=6&per_page=100", "true"},
		{"page=13&per_page=100", "true"},
		{"page=30&per_page=25&status=active", "status = 'active'"},
		{"page=7&per_page=100&scope=me", "assigned_to = 2"},
		{"page=3&per_page=100&search=corp", "company_id IS NOT NULL"},
		{"page=2&per_page=10&search=name1", "last_name LIKE 'Name1%'"},
	} {
		for key, expr := range order {
			for _, dir := range []string{"asc", "desc"} {
				q := fmt.Sprintf("%s&sort_by=%s&sort_dir=%s", tc.query, key, dir)
				r := e.do(t, "GET", "/contacts?"+q, e.user, nil)
				wantStatus(t, r, 200)
				var page struct {
					Data []struct {
						ID int64 `json:"id"`
					} `json:"data"`
					Total    int `json:"total"`
					LastPage int `json:"last_page"`
					PerPage  int `json:"per_page"`
					Current  int `json:"current_page"`
				}
				if err := json.Unmarshal(r.Raw, &page); err != nil {
					t.Fatal(err)
				}
				got := []int64{}
				for _, c := range page.Data {
					got = append(got, c.ID)
				}
				rows, err := e.db.Query(ctx, fmt.Sprintf(`SELECT id FROM contacts WHERE %s ORDER BY %s %s, id %s LIMIT %d OFFSET %d`,
					tc.where, expr, dir, dir, page.PerPage, (page.Current-1)*page.PerPage))
				if err != nil {
					t.Fatal(err)
				}
				want := []int64{}
				for rows.Next() {
					var id int64
					if err := rows.Scan(&id); err != nil {
						t.Fatal(err)
					}
					want = append(want, id)
				}
				rows.Close()
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("%s ids (-want +got):\n%s", q, diff)
				}
				if n := e.count(t, `SELECT count(*) FROM contacts WHERE `+tc.where); page.Total != n {
					t.Errorf("%s total %d, want %d", q, page.Total, n)
				}
			}
		}
	}
	// A search page past the end still reports the total.
	r := e.do(t, "GET", "/contacts?search=corp&page=99", e.user, nil)
	wantStatus(t, r, 200)
	if n := e.count(t, `SELECT count(*) FROM contacts WHERE company_id IS NOT NULL`); r.Body["total"] != float64(n) || len(r.Body["data"].([]any)) != 0 {
		t.Errorf("page past the end: total %v, %d rows", r.Body["total"], len(r.Body["data"].([]any)))
	}
}

// TestSearchCompanyName: a term in the company's name finds its contacts
// (through the companies index, as company_name is not in the contact's
// trigram text), follows renames, and never matches across two fields.
func TestSearchCompanyName(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	acme := id(t, e.do(t, "POST", "/companies", e.admin, map[string]any{"name": "Acme 77 Widgets"}))
	other := id(t, e.do(t, "POST", "/companies", e.admin, map[string]any{"name": "Other", "domain": "acme77.test"}))
	for _, c := range []map[string]any{
		{"first_name": "Ada", "last_name": "One", "company_id": acme},
		{"first_name": "Bob", "last_name": "Two", "company_id": other},
		{"first_name": "Cy", "last_name": "Acme 77", "company_id": other},
		{"first_name": "Di", "last_name": "Widgets", "email": "di@acme.test"},
		{"first_name": "Ed", "last_name": "50%_off"},
	} {
		wantStatus(t, e.do(t, "POST", "/contacts", e.admin, c), 201)
	}
	names := func(q string) []string {
		t.Helper()
		r := e.do(t, "GET", "/contacts?"+q, e.user, nil)
		wantStatus(t, r, 200)
		out := []string{}
		for _, c := range r.Body["data"].([]any) {
			out = append(out, c.(map[string]any)["first_name"].(string))
		}
		if int(r.Body["total"].(float64)) != len(out) {
			t.Errorf("%s: total %v for %d rows", q, r.Body["total"], len(out))
		}
		return out
	}
	for _, tc := range []struct {
		query string
		want  []string
	}{
		{"search=acme%2077", []string{"Ada", "Cy"}},
		{"search=77%20WIDG", []string{"Ada"}},
		{"search=widgets", []string{"Ada", "Di"}},
		{"search=acme77", []string{}},                           // only the other company's domain
		{"search=one%0Aacme", []string{}},                       // nor from a contact field into the company
		{"search=50%25_", []string{"Ed"}},                       // % and _ are literal
		{"search=0%25", []string{"Ed"}},                         //
		{"search=acme&status=inactive", []string{}},             // combined with a filter
		{"search=ac&sort_by=name", []string{"Ada", "Cy", "Di"}}, // shorter than a trigram
	} {
		if diff := cmp.Diff(tc.want, names(tc.query+"&sort_by=name")); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.query, diff)
		}
	}
	wantStatus(t, e.do(t, "PUT", fmt.Sprintf("/companies/%d", acme), e.admin, map[string]any{"name": "Globex"}), 200)
	if diff := cmp.Diff([]string{"Ada"}, names("search=globex")); diff != "" {
		t.Errorf("after rename (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"Cy"}, names("search=acme%2077")); diff != "" {
		t.Errorf("old name after rename (-want +got):\n%s", diff)
	}
}

// TestImportWritesCompleteRows: imported rows carry the stored company name
// (not the file's spelling) and one contacts.imported event lists them.
func TestImportWritesCompleteRows(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	acme := id(t, e.do(t, "POST", "/companies", e.admin, map[string]any{"name": "Acme, Inc."}))
	file := "first_name,last_name,email,company_name,tags,status\nAda,L,ada@x.test,\"ACME, INC.\",\"b, a\",inactive\n" +
		"Bob,M,,\"acme, inc.\",,\nCy,N,cy@x.test,Fresh Co,,\nDi,O,,,,\n"
	r := e.upload(t, e.admin, "file", "c.csv", []byte(file))
	wantStatus(t, r, 200)
	if r.Body["imported"] != 4.0 {
		t.Fatalf("import %s", r.Raw)
	}
	fresh := int64(e.count(t, `SELECT id FROM companies WHERE name = 'Fresh Co'`))
	events := importedEvents(t, e)
	if len(events) != 1 {
		t.Fatalf("%d contacts.imported events, want 1", len(events))
	}
	ids := events[0].IDs
	if len(ids) != 4 {
		t.Fatalf("event ids %v, want 4", ids)
	}
	if n := e.count(t, `SELECT count(*) FROM outbox WHERE type = 'contact.created'`); n != 0 {
		t.Errorf("contact.created events %d, want 0", n)
	}
	wantCompany := []any{float64(acme), float64(acme), float64(fresh), nil}
	wantName := []any{"Acme, Inc.", "Acme, Inc.", "Fresh Co", nil}
	wantFirst := []string{"Ada", "Bob", "Cy", "Di"}
	for i, cid := range ids {
		got := e.do(t, "GET", fmt.Sprintf("/contacts/%d", cid), e.admin, nil)
		wantStatus(t, got, 200)
		c := dataOf(t, got)
		if c["first_name"] != wantFirst[i] || c["company_id"] != wantCompany[i] || c["company_name"] != wantName[i] {
			t.Errorf("row %d: %v", i, c)
		}
	}
	// The bulk flag is transaction-local: a later API insert still gets
	// its company name from the trigger.
	r = e.do(t, "POST", "/contacts", e.admin, map[string]any{"first_name": "Ed", "last_name": "P", "company_id": acme})
	wantStatus(t, r, 201)
	if dataOf(t, r)["company_name"] != "Acme, Inc." {
		t.Errorf("API insert after import: %s", r.Raw)
	}
}

// importedEvent is one contacts.imported outbox row.
type importedEvent struct {
	AggregateID string
	contacts.Imported
}

// importedEvents returns the contacts.imported events in outbox order.
func importedEvents(t *testing.T, e *env) []importedEvent {
	t.Helper()
	rows, err := e.db.Query(context.Background(), `SELECT aggregate_id, payload::text FROM outbox
		WHERE type = 'contacts.imported' ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var events []importedEvent
	for rows.Next() {
		var ev importedEvent
		var payload string
		if err := rows.Scan(&ev.AggregateID, &payload); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal([]byte(payload), &ev.Imported); err != nil {
			t.Fatal(err)
		}
		events = append(events, ev)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return events
}

// TestBigImportSearchableAndChunked: rows of an import are found by search
// at once (their trigram entries may still be in the GIN pending list) and
// after the list is merged; its events list every id once, ascending, at
// most contacts.ImportEventIDs per event, named by their first id.
func TestBigImportSearchableAndChunked(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const n = 2*contacts.ImportEventIDs + 500
	var file strings.Builder
	file.WriteString("first_name,last_name,email,company_name\n")
	for i := range n {
		fmt.Fprintf(&file, "Bulk%d,Quokka%d,bulk%d@x.test,Wombat %d\n", i, i, i, i%7)
	}
	r := e.upload(t, e.admin, "file", "big.csv", []byte(file.String()))
	wantStatus(t, r, 200)
	if r.Body["imported"] != float64(n) {
		t.Fatalf("import %s", r.Raw[:min(len(r.Raw), 300)])
	}
	search := func(when, q string, want int) {
		t.Helper()
		l := e.do(t, "GET", "/contacts?per_page=5&search="+q, e.admin, nil)
		wantStatus(t, l, 200)
		if got := l.Body["total"]; got != float64(want) {
			t.Errorf("%s: search %q total %v, want %d", when, q, got, want)
		}
	}
	for _, when := range []string{"right after the import", "after the pending list is merged"} {
		search(when, "quokka1234", 1)
		search(when, "bulk2499@x", 1)
		search(when, "quokka", n)
		search(when, "wombat%203", 357) // company branch: i%7 == 3
		if _, err := e.db.Exec(context.Background(), `SELECT gin_clean_pending_list('contacts_search_trgm')`); err != nil {
			t.Fatal(err)
		}
	}
	events := importedEvents(t, e)
	var sizes []int
	var all []int64
	for _, ev := range events {
		sizes = append(sizes, len(ev.IDs))
		if ev.AggregateID != fmt.Sprint(ev.IDs[0]) {
			t.Errorf("aggregate id %s, first id %d", ev.AggregateID, ev.IDs[0])
		}
		all = append(all, ev.IDs...)
	}
	if diff := cmp.Diff([]int{contacts.ImportEventIDs, contacts.ImportEventIDs, 500}, sizes); diff != "" {
		t.Errorf("event sizes (-want +got):\n%s", diff)
	}
	var stored []int64
	rows, err := e.db.Query(context.Background(), `SELECT id FROM contacts ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	stored, err = pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(stored, all); diff != "" {
		t.Errorf("event ids vs stored ids (-want +got):\n%s", diff)
	}
}
