package csvx_test

import (
	"bytes"
	"context"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/opencrm/crm/pkg/csvx"
	"github.com/opencrm/crm/pkg/db"
	"github.com/opencrm/crm/pkg/testdb"
)

func noMigrations(context.Context, *db.DB) error { return nil }

// copyCSV runs query through csvx.Copy on a connection of d.
func copyCSV(t *testing.T, d *db.DB, query string, args ...any) (string, error) {
	t.Helper()
	ctx := context.Background()
	conn, err := d.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	var out bytes.Buffer
	err = csvx.Copy(ctx, conn.Conn().PgConn(), &out, query, args)
	return out.String(), err
}

// writerCSV is what csvx.Writer writes for rows (nil cells are NULLs).
func writerCSV(t *testing.T, rows [][]*string) string {
	t.Helper()
	var out bytes.Buffer
	w := csvx.NewWriter(&out)
	for _, r := range rows {
		cells := make([]string, len(r))
		for i, c := range r {
			if c != nil {
				cells[i] = *c
			}
		}
		if err := w.Write(cells); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	return out.String()
}

// trickyCells are cells where COPY's CSV and encoding/csv differ, or where
// Escape applies, alone and in combination.
var trickyCells = []string{
	"", " ", " lead", "trail ", "\u00a0nbsp", "\u3000wide", "\u2028sep", "\u0085next", "\u1680ogham", "\vtab", "\fform",
	`\.`, `\.x`, `\`, "=1+1", "+44 1", "-5", "@SUM(A1)", ";=1", "\tx", "\rx", "\r\nx", "\nx", "a,b", `a"b`, `"`, `""`,
	",", "line1\nline2, \"q\"", "=a,b", `=HYPERLINK("x")`, " a,b", "'=1", "plain", "Müller", "é", "x\r", "x\n", "'",
	"日本", "=", "-", "\t", "\r", "\n",
}

// TestCopyMatchesWriter: for any cells, Copy writes exactly the bytes
// csvx.Writer writes for them (every tricky cell in every column
// position, NULLs, then random strings of tricky characters).
func TestCopyMatchesWriter(t *testing.T) {
	t.Parallel()
	d := testdb.New(t, "csvxcopy", noMigrations)
	ctx := context.Background()
	if _, err := d.Exec(ctx, `CREATE TABLE cells (i int PRIMARY KEY, a text, b text, c text)`); err != nil {
		t.Fatal(err)
	}
	var rows [][]*string
	add := func(cells ...*string) { rows = append(rows, cells) }
	for _, s := range trickyCells {
		add(&s, &s, &s)
		add(nil, &s, nil)
		x := "x"
		add(&s, &x, nil)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	alphabet := []string{"a", " ", ",", `"`, "\n", "\r", "\t", "=", "+", "-", "@", ";", `\`, ".", "'", "\u00a0", "\u3000", "é", "\v"}
	for range 3000 {
		row := make([]*string, 3)
		for i := range row {
			if rng.IntN(8) == 0 {
				continue
			}
			var sb strings.Builder
			for range rng.IntN(5) {
				sb.WriteString(alphabet[rng.IntN(len(alphabet))])
			}
			s := sb.String()
			row[i] = &s
		}
		add(row...)
	}
	for i, r := range rows {
		if _, err := d.Exec(ctx, `INSERT INTO cells VALUES ($1, $2, $3, $4)`, i, r[0], r[1], r[2]); err != nil {
			t.Fatal(err)
		}
	}
	got, err := copyCSV(t, d, `SELECT a, b, c FROM cells ORDER BY i`)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(strings.Split(writerCSV(t, rows), "\n"), strings.Split(got, "\n")); diff != "" {
		t.Errorf("Copy differs from Writer (-want +got):\n%s", diff)
	}
}

// TestCopyHostileArguments: an argument is only ever a value. Each hostile
// string comes back unchanged as the one cell of the one row it selects
// (csv-escaped as Writer would), and a row that would match only were the
// value SQL never appears.
func TestCopyHostileArguments(t *testing.T) {
	t.Parallel()
	d := testdb.New(t, "csvxcopyargs", noMigrations)
	ctx := context.Background()
	if _, err := d.Exec(ctx, `CREATE TABLE t (id int, name text)`); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Exec(ctx, `INSERT INTO t VALUES (1, 'secret')`); err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{
		`' OR 1=1 --`, `x'; DROP TABLE t; --`, `\' OR true --`, `$1`, `$2 $$ $q$`, `'') OR (''='`, `E'\x27'`,
		"-- comment\n' OR '1'='1", `*/ OR true /*`, `%' OR name LIKE '%`, "Müller'", `''''`,
	} {
		got, err := copyCSV(t, d, `SELECT $1::text FROM t WHERE name = $1 OR id = $2`, v, int64(1))
		if err != nil {
			t.Fatalf("%q: %v", v, err)
		}
		if want := writerCSV(t, [][]*string{{&v}}); got != want {
			t.Errorf("%q: got %q, want %q", v, got, want)
		}
		got, err = copyCSV(t, d, `SELECT name FROM t WHERE name = $1`, v)
		if err != nil || got != "" {
			t.Errorf("%q matched: %q %v", v, got, err)
		}
		got, err = copyCSV(t, d, `SELECT name FROM t WHERE name = ANY($1)`, []string{v, "nobody"})
		if err != nil || got != "" {
			t.Errorf("%q in an array matched: %q %v", v, got, err)
		}
	}
}

// TestInline: each argument type's literal; what cannot be written is an
// error, not a guess.
func TestInline(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 3, 4, 5, 6, 7, 123456000, time.FixedZone("x", 3600))
	args := []any{"it's", int64(-3), 7, true, at, []string{"a'b", "c"}, []int64{1, -2}, int32(9), []string{}}
	got, err := csvx.Inline(`$1 $2 $3 $4 $5 $6 $7 $8 $9 $1`, args)
	want := `'it''s' (-3) 7 true '2026-03-04T04:06:07.123456Z'::timestamptz ARRAY['a''b','c']::text[] ARRAY[1,(-2)]::bigint[] 9 ARRAY[]::text[] 'it''s'`
	if err != nil || got != want {
		t.Errorf("Inline = %q, %v; want %q", got, err, want)
	}
	// $10 is the tenth argument, not $1 followed by 0.
	ten := make([]any, 10)
	for i := range ten {
		ten[i] = i + 1
	}
	if got, err := csvx.Inline(`$10 $1`, ten); err != nil || got != `10 1` {
		t.Errorf("$10: %q %v", got, err)
	}
	// A placeholder's literal is never read again for placeholders.
	if got, err := csvx.Inline(`$1 $2`, []any{"$2", "x"}); err != nil || got != `'$2' 'x'` {
		t.Errorf("nested: %q %v", got, err)
	}
	for _, tc := range []struct {
		name, sql string
		args      []any
		want      string
	}{
		{"NUL byte", `$1`, []any{"a\x00b"}, "csvx: argument $1: a string holds a NUL byte"},
		{"NUL in an array", `$1`, []any{[]string{"\x00"}}, "csvx: argument $1: a string holds a NUL byte"},
		{"unknown type", `$1`, []any{1.5}, "csvx: argument $1: a float64 cannot be written as a literal"},
		{"missing argument", `$1 $2`, []any{"a"}, "csvx: $2 has no argument"},
		{"$0", `$0`, []any{"a"}, "csvx: $0 has no argument"},
	} {
		if _, err := csvx.Inline(tc.sql, tc.args); err == nil || err.Error() != tc.want {
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.want)
		}
	}
}

// TestCellSQL: a custom field's cell rendered by PostgreSQL is
// customfield.Cell's text of the same value.
func TestCellSQL(t *testing.T) {
	t.Parallel()
	d := testdb.New(t, "csvxcell", noMigrations)
	cell, err := csvx.CellSQL("v", "f")
	if err != nil {
		t.Fatal(err)
	}
	got, err := copyCSV(t, d, `SELECT `+cell+`, `+csvx.TimeSQL("t")+` FROM (VALUES
		(1, '{"f": "text"}'::jsonb), (2, '{"f": 42}'), (3, '{"f": true}'), (4, '{"f": ["crm", "bi"]}'),
		(5, '{"f": []}'), (6, '{}'), (7, '{"f": null}'), (8, '{"f": "-1.5"}'), (9, '{"f": ""}')) x (i, v),
		(SELECT '2026-03-04 05:06:07.1+02'::timestamptz AS t) ts ORDER BY i`)
	if err != nil {
		t.Fatal(err)
	}
	ts := "2026-03-04T03:06:07.100000Z"
	want := "text," + ts + "\n42," + ts + "\ntrue," + ts + "\n\"crm,bi\"," + ts + "\n," + ts + "\n," + ts + "\n," + ts +
		"\n'-1.5," + ts + "\n," + ts + "\n"
	if got != want {
		t.Errorf("cells\n got %q\nwant %q", got, want)
	}
	if _, err := csvx.CellSQL("v", "a\x00"); err == nil {
		t.Error("a NUL in a key was accepted")
	}
}
