package api

import (
	"context"
	"log/slog"

	"github.com/opencrm/crm/pkg/audit"
	"github.com/opencrm/crm/pkg/contract/contactsapi"
	"github.com/opencrm/crm/pkg/db"
)

// auditor records the edge's audit entries (exports, imports) in the
// contacts outbox on crm:audit, after the action, in a statement of its
// own: an export commits nothing, and an import commits batch by batch.
// A failure to record is logged, not answered: the action is done.
// Deletes are recorded by the store in the delete's transaction.
type auditor struct{ db *db.DB }

func (a auditor) record(ctx context.Context, e audit.Entry) {
	if a.db == nil {
		return
	}
	if err := audit.Record(ctx, a.db, contactsapi.Service, e); err != nil {
		slog.ErrorContext(ctx, "audit entry not recorded", "action", e.Action, "error", err.Error())
	}
}
