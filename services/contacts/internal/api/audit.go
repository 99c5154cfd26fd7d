package api

import (
	"context"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"

	"github.com/opencrm/crm/pkg/audit"
	"github.com/opencrm/crm/pkg/contract/contactsapi"
	"github.com/opencrm/crm/pkg/contract/identityapi"
	"github.com/opencrm/crm/pkg/db"
)

// auditor records the edge's audit entries (exports, imports, deletes)
// in the contacts outbox on crm:audit. They are written after the action
// committed, in a statement of their own: the action's transaction is the
// service's. A failure to record is logged, not answered: the action is
// done.
type auditor struct{ db *db.DB }

func (a auditor) record(ctx context.Context, e audit.Entry) {
	if a.db == nil {
		return
	}
	if err := audit.Record(ctx, a.db, contactsapi.Service, e); err != nil {
		slog.ErrorContext(ctx, "audit entry not recorded", "action", e.Action, "error", err.Error())
	}
}

// deleted wraps del so that a delete that succeeded records
// record.deleted for object id.
func (a auditor) deleted(object string, del func(context.Context, int64) error) func(context.Context, int64) error {
	return func(ctx context.Context, id int64) error {
		if err := del(ctx, id); err != nil {
			return err
		}
		a.record(ctx, audit.Entry{Action: identityapi.AuditRecordDeleted, Object: object, ID: strconv.FormatInt(id, 10),
			Details: map[string]string{"object": object}})
		return nil
	}
}

// filters are an export's query parameters as its entry records them.
func filters(v url.Values) map[string]any {
	out := map[string]any{}
	for k, vs := range v {
		if len(vs) == 1 {
			out[k] = vs[0]
		} else {
			out[k] = vs
		}
	}
	return out
}

// rowCounter counts the CSV rows written through it: line ends outside
// quoted fields (a quoted field may hold line breaks; an escaped quote
// "" toggles twice).
type rowCounter struct {
	w      interface{ Write([]byte) (int, error) }
	rows   int
	quoted bool
}

func (c *rowCounter) Write(p []byte) (int, error) {
	for _, b := range p {
		switch {
		case b == '"':
			c.quoted = !c.quoted
		case b == '\n' && !c.quoted:
			c.rows++
		}
	}
	return c.w.Write(p)
}

// Flush flushes the download underneath, as the export flushes it.
func (c *rowCounter) Flush() {
	if f, ok := c.w.(http.Flusher); ok {
		f.Flush()
	}
}
