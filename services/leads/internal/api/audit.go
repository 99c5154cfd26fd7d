package api

import (
	"context"
	"log/slog"
	"net/url"

	"github.com/opencrm/crm/pkg/audit"
	"github.com/opencrm/crm/pkg/contract/identityapi"
	"github.com/opencrm/crm/pkg/contract/leadsapi"
	"github.com/opencrm/crm/pkg/db"
)

// The edge's audit entries: an export (export.ran) and an import
// (import.ran). A lead's delete records record.deleted in the store, in
// the deleting transaction; an import's entry is written in the import's
// transaction (store.ImportOptions.Audit). An export has no transaction
// (a COPY on a pooled connection): its entry is written once the last row
// went out, in a statement of its own; a failure to write it is logged,
// not answered, as the file was sent.

// recordExport records export.ran: the export's query parameters and the
// rows sent.
func recordExport(ctx context.Context, d *db.DB, query url.Values, rows int) {
	e := audit.Entry{Action: identityapi.AuditExportRan, Object: "lead",
		Details: map[string]any{"object": "lead", "filters": audit.Filters(query), "rows": rows}}
	if err := audit.Record(ctx, d, leadsapi.Service, e); err != nil {
		slog.ErrorContext(ctx, "audit entry not recorded", "action", e.Action, "error", err.Error())
	}
}

// recordImport records import.ran with q, the import's transaction.
func recordImport(ctx context.Context, q db.Querier, imported, skipped int) error {
	return audit.Record(ctx, q, leadsapi.Service, audit.Entry{Action: identityapi.AuditImportRan, Object: "lead",
		Details: map[string]any{"object": "lead", "imported": imported, "skipped": skipped}})
}
