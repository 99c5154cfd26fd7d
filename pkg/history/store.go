package history

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/opencrm/crm/pkg/contract/historyapi"
	"github.com/opencrm/crm/pkg/db"
)

// Query is one page of a record's history: entries older than Before
// (none: from the newest), PerPage of them.
type Query struct {
	Before  *int64
	PerPage int
}

// List returns a page of object id's history and of the records that
// belong to it (parent_object, parent_id), newest first, and whether older
// entries follow: one range of each of the two indexes, merged.
func List(ctx context.Context, q db.Querier, object string, id int64, p Query) ([]historyapi.HistoryEntry, bool, error) {
	before := int64(1<<63 - 1)
	if p.Before != nil {
		before = *p.Before
	}
	rows, err := q.Query(ctx, `SELECT `+columns+` FROM (
			(SELECT `+columns+` FROM history WHERE object = $1 AND record_id = $2 AND id < $3 ORDER BY id DESC LIMIT $4)
			UNION ALL
			(SELECT `+columns+` FROM history WHERE parent_object = $1 AND parent_id = $2 AND id < $3 ORDER BY id DESC LIMIT $4)
		) entries ORDER BY id DESC LIMIT $4`, object, id, before, p.PerPage+1)
	if err != nil {
		return nil, false, fmt.Errorf("history: %w", err)
	}
	entries, err := pgx.CollectRows(rows, scan)
	if err != nil {
		return nil, false, fmt.Errorf("history: %w", err)
	}
	more := len(entries) > p.PerPage
	if more {
		entries = entries[:p.PerPage]
	}
	return entries, more, nil
}

// Recorded reports whether object id has any history: a record that was
// deleted still has, one that never existed has none.
func Recorded(ctx context.Context, q db.Querier, object string, id int64) (bool, error) {
	var ok bool
	err := q.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM history WHERE object = $1 AND record_id = $2)`, object, id).Scan(&ok)
	if err != nil {
		return false, fmt.Errorf("history: %w", err)
	}
	return ok, nil
}

const columns = `id, object, record_id, at, action, actor, via, request_id, changes`

func scan(row pgx.CollectableRow) (historyapi.HistoryEntry, error) {
	var (
		e              historyapi.HistoryEntry
		actor, changes []byte
	)
	if err := row.Scan(&e.ID, &e.Object, &e.RecordID, &e.At, &e.Action, &actor, &e.Via, &e.RequestID, &changes); err != nil {
		return e, err
	}
	if err := json.Unmarshal(actor, &e.Actor); err != nil {
		return e, err
	}
	e.Changes = []historyapi.HistoryChange{}
	return e, json.Unmarshal(changes, &e.Changes)
}
