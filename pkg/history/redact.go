package history

import (
	"context"
	"fmt"

	"github.com/opencrm/crm/pkg/db"
)

// Erased is what redaction leaves in place of a value (privacyapi.Erased;
// this package cannot import the contract, whose client imports it).
const Erased = "[erased]"

// redact is the entries' values with every field but ids and timestamps
// replaced by "[erased]" (custom fields as a whole): what a person's
// erasure leaves of the history of their records, which still tells who
// changed what when. Values already erased or null stay as they are, so
// running it twice changes nothing the second time.
const redact = `
UPDATE history h SET before = r.before, after = r.after
FROM (SELECT id,
    (SELECT jsonb_object_agg(e.key, CASE WHEN e.key = 'id' OR e.key LIKE '%\_id' OR e.key IN ('created_at', 'updated_at')
            OR e.value = 'null' THEN e.value ELSE to_jsonb($3::text) END)
        FROM jsonb_each(coalesce(before, '{}')) e) AS before,
    (SELECT jsonb_object_agg(e.key, CASE WHEN e.key = 'id' OR e.key LIKE '%\_id' OR e.key IN ('created_at', 'updated_at')
            OR e.value = 'null' THEN e.value ELSE to_jsonb($3::text) END)
        FROM jsonb_each(coalesce(after, '{}')) e) AS after,
    before AS old_before, after AS old_after
    FROM history
    WHERE (object = $1 AND record_id = ANY($2)) OR (parent_object = $1 AND parent_id = ANY($2))) r
WHERE h.id = r.id AND (r.before IS DISTINCT FROM r.old_before OR r.after IS DISTINCT FROM r.old_after)`

// Redact replaces the values in the history of object's records ids, and
// of the records that belong to them (a contact's notes and tasks), with
// "[erased]", keeping ids and timestamps; it answers how many entries
// changed. Call it in the erasure's transaction.
func Redact(ctx context.Context, q db.Querier, object string, ids []int64) (int64, error) {
	if len(ids) == 0 {
		return 0, nil
	}
	tag, err := q.Exec(ctx, redact, object, ids, Erased)
	if err != nil {
		return 0, fmt.Errorf("history: redact %s: %w", object, err)
	}
	return tag.RowsAffected(), nil
}
