package store

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestBackfillPhones: rows written without phone_e164 (the previous
// release, plain SQL) get it from the background pass; a change of phone
// or mobile that does not give it leaves it pending again, not stale; it
// never shows in record history.
func TestBackfillPhones(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d, s := newTestStore(t)
	if _, err := d.Exec(ctx, `INSERT INTO contacts (first_name, last_name, phone, mobile) VALUES
		('A', 'A', '(415) 555-0100', NULL), ('B', 'B', 'n/a', '+44 20 7946 0018'), ('C', 'C', 'none', NULL), ('D', 'D', NULL, NULL)`); err != nil {
		t.Fatal(err)
	}
	read := func() map[string]*string {
		t.Helper()
		rows, err := d.Query(ctx, `SELECT first_name, phone_e164 FROM contacts`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		out := map[string]*string{}
		for rows.Next() {
			var n string
			var p *string
			if err := rows.Scan(&n, &p); err != nil {
				t.Fatal(err)
			}
			out[n] = p
		}
		return out
	}
	str := func(s string) *string { return &s }
	if diff := cmp.Diff(map[string]*string{"A": nil, "B": nil, "C": nil, "D": nil}, read()); diff != "" {
		t.Errorf("before (-want +got):\n%s", diff)
	}
	n, err := s.BackfillPhones(ctx, 2) // two batches and an empty one
	if err != nil || n != 3 {
		t.Fatalf("BackfillPhones = %d, %v; want 3", n, err)
	}
	want := map[string]*string{"A": str("+14155550100"), "B": str("+442079460018"), "C": str(""), "D": nil}
	if diff := cmp.Diff(want, read()); diff != "" {
		t.Errorf("after (-want +got):\n%s", diff)
	}
	if _, err := d.Exec(ctx, `UPDATE contacts SET mobile = '+1 212 555 0199' WHERE first_name = 'C'`); err != nil {
		t.Fatal(err)
	}
	want["C"] = nil
	if diff := cmp.Diff(want, read()); diff != "" {
		t.Errorf("after a change of mobile (-want +got):\n%s", diff)
	}
	if n, err := s.BackfillPhones(ctx, 0); err != nil || n != 1 {
		t.Fatalf("second pass = %d, %v; want 1", n, err)
	}
	want["C"] = str("+12125550199")
	if diff := cmp.Diff(want, read()); diff != "" {
		t.Errorf("after the second pass (-want +got):\n%s", diff)
	}
	var leaked int
	if err := d.QueryRow(ctx, `SELECT count(*) FROM history WHERE before ? 'phone_e164' OR after ? 'phone_e164'`).Scan(&leaked); err != nil {
		t.Fatal(err)
	}
	if leaked != 0 {
		t.Errorf("%d history entries record phone_e164", leaked)
	}
}
