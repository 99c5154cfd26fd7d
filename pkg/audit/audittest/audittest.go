// Package audittest reads the audit entries a context's actions wrote to
// its outbox, for the tests of those actions.
package audittest

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/opencrm/crm/pkg/contract/identityapi"
	"github.com/opencrm/crm/pkg/db"
)

// Entries are the audit messages in q's outbox (the crm:audit stream), in
// order, with what a test can predict: each must carry a source, a time
// and a request id, which are then cleared, as is the actor's name (the
// test issuer's).
func Entries(t testing.TB, q db.Querier) []identityapi.AuditMessage {
	t.Helper()
	rows, err := q.Query(context.Background(), `SELECT payload::text FROM outbox WHERE stream = $1 ORDER BY id`,
		identityapi.AuditStream)
	if err != nil {
		t.Fatal(err)
	}
	payloads, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	out := make([]identityapi.AuditMessage, len(payloads))
	for i, p := range payloads {
		if err := json.Unmarshal([]byte(p), &out[i]); err != nil {
			t.Fatal(err)
		}
		if out[i].Source == "" || out[i].At.IsZero() || out[i].RequestID == "" {
			t.Errorf("entry %d without source, time or request id: %s", i, p)
		}
		out[i].Source, out[i].RequestID, out[i].Actor.Name = "", "", ""
		out[i].At = time.Time{}
	}
	return out
}
