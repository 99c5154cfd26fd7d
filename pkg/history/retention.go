package history

import (
	"context"
	"fmt"
	"time"

	"github.com/opencrm/crm/pkg/db"
)

// pruneBatch bounds one DELETE, so pruning a long history never holds
// many row locks or one long transaction.
const pruneBatch = 10_000

// Prune deletes the entries older than age (CRM_HISTORY_RETENTION), in
// batches, and returns how many; age 0 keeps everything.
func Prune(ctx context.Context, q db.Querier, age time.Duration) (int64, error) {
	if age <= 0 {
		return 0, nil
	}
	cutoff := time.Now().Add(-age)
	var total int64
	for {
		tag, err := q.Exec(ctx, `DELETE FROM history WHERE id IN (SELECT id FROM history WHERE at < $1 ORDER BY id LIMIT $2)`, cutoff, pruneBatch)
		if err != nil {
			return total, fmt.Errorf("history: prune: %w", err)
		}
		total += tag.RowsAffected()
		if tag.RowsAffected() < pruneBatch {
			return total, nil
		}
	}
}
