package cube_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/opencrm/crm/pkg/db"
	"github.com/opencrm/crm/pkg/list/cube"
	"github.com/opencrm/crm/pkg/list/listsql"
	"github.com/opencrm/crm/pkg/testdb"
)

// records spread over three years, with the cube of their status at the
// three grains, folded into one row per key.
func migrate(ctx context.Context, d *db.DB) error {
	_, err := d.Exec(ctx, `
		CREATE TABLE IF NOT EXISTS records AS
			SELECT g AS id, (ARRAY['open','won'])[1 + g % 2] AS status,
				timestamptz '2025-01-01 00:00:00Z' + (g % 1100) * interval '1 day' + (g % 24) * interval '1 hour' AS created_at
			FROM generate_series(1, 20000) g;
		CREATE TABLE IF NOT EXISTS records_cube AS
			SELECT k.grain, k.period, r.status, count(*) AS n
			FROM (SELECT status, (created_at AT TIME ZONE 'UTC')::date AS day FROM records) r,
				LATERAL (VALUES ('a'::"char", '-infinity'::date), ('m', date_trunc('month', r.day)::date), ('d', r.day)) k (grain, period)
			GROUP BY 1, 2, 3`)
	return err
}

func TestCountMatchesCountingTheRecords(t *testing.T) {
	t.Parallel()
	d := testdb.New(t, "cubetest", migrate)
	ctx := context.Background()
	date := func(s string) *time.Time {
		v, err := time.Parse(time.DateOnly, s)
		if err != nil {
			t.Fatal(err)
		}
		return &v
	}
	cases := []struct {
		name     string
		from, to *time.Time
	}{
		{"all time", nil, nil},
		{"within one day", date("2025-03-04"), date("2025-03-05")},
		{"within one month", date("2025-03-04"), date("2025-03-20")},
		{"across a month's end", date("2025-03-20"), date("2025-04-10")},
		{"one whole month", date("2025-03-01"), date("2025-04-01")},
		{"whole months and edges", date("2025-02-11"), date("2026-07-18")},
		{"from only", date("2026-05-17"), nil},
		{"to only", nil, date("2025-06-02")},
		{"from a month's start", date("2025-06-01"), nil},
		{"before any record", date("2020-01-01"), date("2020-02-01")},
		{"across a year's end", date("2025-12-30"), date("2026-01-02")},
	}
	for _, status := range []string{"", "won"} {
		for _, c := range cases {
			t.Run(fmt.Sprintf("%s/%s", c.name, status), func(t *testing.T) {
				w := &listsql.Where{}
				rw := &listsql.Where{}
				if status != "" {
					w.And("status = " + w.Arg(status))
					rw.And("status = " + rw.Arg(status))
				}
				if c.from != nil {
					rw.And("created_at >= " + rw.Arg(*c.from))
				}
				if c.to != nil {
					rw.And("created_at < " + rw.Arg(*c.to))
				}
				var want, got int64
				if err := d.QueryRow(ctx, `SELECT count(*) FROM records `+rw.SQL(), rw.Args()...).Scan(&want); err != nil {
					t.Fatal(err)
				}
				if err := d.QueryRow(ctx, cube.Count("records_cube", w, c.from, c.to), w.Args()...).Scan(&got); err != nil {
					t.Fatal(err)
				}
				if got != want {
					t.Errorf("cube count = %d, counting the records = %d", got, want)
				}
			})
		}
	}
}
