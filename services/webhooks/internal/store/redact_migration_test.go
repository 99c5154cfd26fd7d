package store_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/opencrm/crm/pkg/testdb"
	"github.com/opencrm/crm/services/webhooks/internal/store"
	"github.com/opencrm/crm/services/webhooks/migrations"
)

// TestRedactPerStatementMigration: 008's down part brings back the
// per-row trigger and its up part the per-statement one; events of an
// erased contact are stored redacted under either, and one trigger
// only is ever in place.
func TestRedactPerStatementMigration(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, d := newStore(t)
	up, down := testdb.Sections(t, migrations.FS, "008_redact_per_statement.sql")
	testdb.Apply(t, d, "erase contact 5", `INSERT INTO erased_records (object, record_id) VALUES ('contact', '5')`)
	source := int64(0)
	stores := func(step string, wantTriggers ...string) {
		t.Helper()
		triggers := testdb.Column[string](t, d, `SELECT tgname FROM pg_trigger
			WHERE tgrelid = 'events'::regclass AND NOT tgisinternal ORDER BY tgname`)
		if diff := cmp.Diff(wantTriggers, triggers); diff != "" {
			t.Errorf("%s: triggers on events (-want +got):\n%s", step, diff)
		}
		source += 2
		read := []store.NewEvent{
			{Source: "contacts", SourceID: source, Type: "contact.updated", RecordID: "5",
				Data: json.RawMessage(`{"id":5,"email":"ann@example.com"}`), OccurredAt: time.Now()},
			{Source: "contacts", SourceID: source + 1, Type: "contact.updated", RecordID: "6",
				Data: json.RawMessage(`{"id":6,"email":"bob@example.com"}`), OccurredAt: time.Now()},
		}
		if _, err := st.IngestAll(ctx, read); err != nil {
			t.Fatal(err)
		}
		got := testdb.Column[string](t, d, `SELECT data::text FROM events WHERE source_id IN ($1, $2) ORDER BY source_id`,
			source, source+1)
		want := []string{`{"id": 5, "email": "[erased]"}`, `{"id": 6, "email": "bob@example.com"}`}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s: stored (-want +got):\n%s", step, diff)
		}
	}
	stores("008 up", "events_redact_erased_rows")
	testdb.Apply(t, d, "008 down", down)
	stores("008 down", "events_redact_erased")
	testdb.Apply(t, d, "008 up", up)
	stores("008 up again", "events_redact_erased_rows")
}
