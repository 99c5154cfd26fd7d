package timestamp_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/opencrm/crm/pkg/db"
	"github.com/opencrm/crm/pkg/testdb"
	"github.com/opencrm/crm/pkg/timestamp"
)

func TestMarshalKeepsSixDigits(t *testing.T) {
	t.Parallel()
	tests := map[time.Time]string{
		time.Date(2026, 11, 22, 3, 10, 26, 123400000, time.UTC):               `"2026-11-22T03:10:26.123400Z"`,
		time.Date(2026, 11, 22, 3, 10, 26, 0, time.UTC):                       `"2026-11-22T03:10:26.000000Z"`,
		time.Date(2026, 11, 22, 4, 10, 26, 5000, time.FixedZone("CET", 3600)): `"2026-11-22T03:10:26.000005Z"`,
	}
	for in, want := range tests {
		b, err := json.Marshal(struct{ T timestamp.Time }{timestamp.Of(in)})
		if err != nil {
			t.Fatal(err)
		}
		if got := string(b); got != `{"T":`+want+`}` {
			t.Errorf("%v → %s, want %s", in, got, want)
		}
	}
	var back timestamp.Time
	if err := json.Unmarshal([]byte(`"2026-11-22T03:10:26.1234Z"`), &back); err != nil || back.Nanosecond() != 123400000 {
		t.Errorf("unmarshal: %v %v", back, err)
	}
}

func TestScan(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := testdb.New(t, "tstest", func(context.Context, *db.DB) error { return nil })
	var got timestamp.Time
	var null *timestamp.Time
	err := d.QueryRow(ctx, `SELECT $1::timestamptz, NULL::timestamptz`, timestamp.Of(time.Date(2026, 1, 2, 3, 4, 5, 6000, time.UTC))).Scan(&got, &null)
	if err != nil {
		t.Fatal(err)
	}
	if got.String() != "2026-01-02T03:04:05.000006Z" || null != nil {
		t.Errorf("got %s, null %v", got, null)
	}
}
