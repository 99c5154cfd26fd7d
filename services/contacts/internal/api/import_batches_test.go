package api_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"

	"github.com/opencrm/crm/services/contacts/internal/contacts"
)

// TestImportAcrossBatches: a file longer than one write batch imports as
// one file. Duplicates and row errors on either side of the batch border
// are found and listed in row order, a company is created once whichever
// batch names it first, event ids ascend across batches, totals stay
// exact; a file rejected after its first batch was written, a form option
// after such a file and a dry run all write nothing.
func TestImportAcrossBatches(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	storedID := id(t, e.do(t, "POST", "/contacts", e.admin, map[string]any{"first_name": "In", "last_name": "Table",
		"email": "stored@x.test"}))

	// Data row i is the file's row i+2. Row 100 is invalid, so the first
	// batch ends at row ImportBatch+2 and "Late Co" first appears in the
	// second batch, with the other duplicates and errors.
	const n = contacts.ImportBatch + 2500
	var lines []string
	for i := range n {
		row := i + 2
		email, company, status := fmt.Sprintf("b%d@x.test", i), "Early", "active"
		switch {
		case row == 100:
			email = "not-an-email"
		case row == contacts.ImportBatch+500:
			email = "B7@X.TEST" // the file's row 9
		case row == contacts.ImportBatch+600:
			email = "STORED@x.test"
		case row == contacts.ImportBatch+1000:
			status = "archived"
		}
		if row > contacts.ImportBatch+2 && i%2 == 1 {
			company = "Late Co"
		}
		lines = append(lines, fmt.Sprintf("F%d,L%d,%s,%s,%s", i, i, email, company, status))
	}
	csv := "first_name,last_name,email,company_name,status\n" + strings.Join(lines, "\n") + "\n"
	wantErrors := []any{
		"Row 100: email must be a valid email address",
		fmt.Sprintf("Row %d: duplicate email B7@X.TEST (already in row 9)", contacts.ImportBatch+500),
		fmt.Sprintf("Row %d: duplicate email STORED@x.test (already exists)", contacts.ImportBatch+600),
		fmt.Sprintf("Row %d: status must be one of active, inactive", contacts.ImportBatch+1000),
	}
	before := func() int {
		return e.count(t, `SELECT count(*) FROM contacts`) + e.count(t, `SELECT count(*) FROM companies`) +
			e.count(t, `SELECT count(*) FROM outbox`)
	}
	untouched := before()

	t.Run("rejected after the first batch", func(t *testing.T) {
		r := e.uploadForm(t, file(csv+"X,\"Y,\n"))
		wantExact(t, r, 422, invalid("file", fmt.Sprintf("Row %d: a quoted cell is not closed (or has a stray quote) starting at line %d", n+2, n+2)))
		if got := before(); got != untouched {
			t.Errorf("contacts + companies + events %d, want %d", got, untouched)
		}
	})
	t.Run("option after the file", func(t *testing.T) {
		wantExact(t, e.uploadForm(t, file(csv), field{name: "dry_run", value: "true"}), 422,
			invalid("dry_run", "must come before the file in the form"))
		if got := before(); got != untouched {
			t.Errorf("contacts + companies + events %d, want %d", got, untouched)
		}
	})

	want := map[string]any{"success": true, "imported": float64(n - 4), "skipped": 4.0, "errors": wantErrors,
		"encoding": "UTF-8", "delimiter": ",", "ignored_columns": []any{},
		"duplicates": []any{map[string]any{"row": float64(contacts.ImportBatch + 600), "email": "STORED@x.test", "duplicate_of": float64(storedID)}}}
	t.Run("dry run", func(t *testing.T) {
		r := e.uploadForm(t, field{name: "dry_run", value: "true"}, file(csv))
		wantStatus(t, r, 200)
		want := maps.Clone(want)
		want["dry_run"], want["message"] = true, fmt.Sprintf("Dry run: would import %d contacts, skipped 4", n-4)
		if diff := cmp.Diff(want, r.Body); diff != "" {
			t.Errorf("dry run answer (-want +got):\n%s", diff)
		}
		if got := before(); got != untouched {
			t.Errorf("contacts + companies + events %d, want %d", got, untouched)
		}
	})

	r := e.uploadForm(t, file(csv))
	wantStatus(t, r, 200)
	want["dry_run"], want["message"] = false, fmt.Sprintf("Imported %d contacts, skipped 4", n-4)
	if diff := cmp.Diff(want, r.Body); diff != "" {
		t.Errorf("import answer (-want +got):\n%s", diff)
	}
	for _, name := range []string{"Early", "Late Co"} {
		if got := e.count(t, `SELECT count(*) FROM companies WHERE name = $1`, name); got != 1 {
			t.Errorf("company %q stored %d times", name, got)
		}
		if got := e.count(t, `SELECT count(*) FROM outbox WHERE type = 'company.created' AND payload->>'name' = $1`, name); got != 1 {
			t.Errorf("company %q announced %d times", name, got)
		}
	}
	if got := e.count(t, `SELECT count(*) FROM contacts WHERE company_name = 'Late Co'`); got != 1250 {
		t.Errorf("contacts of Late Co %d, want 1250", got)
	}

	var all []int64
	for _, ev := range importedEvents(t, e) {
		all = append(all, ev.IDs...)
	}
	rows, err := e.db.Query(context.Background(), `SELECT id FROM contacts WHERE email <> 'stored@x.test' ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	stored, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		t.Fatal(err)
	}
	if !slices.IsSorted(all) || len(all) != n-4 {
		t.Errorf("%d event ids, sorted %v; want %d ascending", len(all), slices.IsSorted(all), n-4)
	}
	if diff := cmp.Diff(stored, all); diff != "" {
		t.Errorf("event ids vs stored ids (-want +got):\n%s", diff)
	}
	if got := e.count(t, `SELECT count(*) FROM contacts WHERE first_name = 'F10100' AND id = $1`, all[10_100-1]); got != 1 {
		t.Errorf("ids do not follow the file's row order across batches")
	}

	late := e.count(t, `SELECT id FROM companies WHERE name = 'Late Co'`)
	for _, q := range []string{"", "status=active", fmt.Sprintf("company_id=%d", late)} {
		l := e.do(t, "GET", "/contacts?per_page=1&"+q, e.admin, nil)
		wantStatus(t, l, 200)
		where := map[string]string{"": "true", "status=active": "status = 'active'"}[q]
		if where == "" {
			where = fmt.Sprintf("company_id = %d", late)
		}
		if want := e.count(t, `SELECT count(*) FROM contacts WHERE `+where); l.Body["total"] != float64(want) {
			t.Errorf("%q: total %v, count(*) %d", q, l.Body["total"], want)
		}
	}
}
