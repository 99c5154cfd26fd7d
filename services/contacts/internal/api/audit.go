package api

import (
	"context"
	"log/slog"
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
