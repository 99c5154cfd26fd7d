package history

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

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

const columns = `id, object, record_id, at, action, actor, via, request_id, before, after`

func scan(row pgx.CollectableRow) (historyapi.HistoryEntry, error) {
	var (
		e                    historyapi.HistoryEntry
		actor, before, after []byte
	)
	if err := row.Scan(&e.ID, &e.Object, &e.RecordID, &e.At, &e.Action, &actor, &e.Via, &e.RequestID, &before, &after); err != nil {
		return e, err
	}
	if err := json.Unmarshal(actor, &e.Actor); err != nil {
		return e, err
	}
	var err error
	e.Changes, err = changes(before, after)
	return e, err
}

// changes lists the fields whose values differ between the stored before
// and after (objects of the changed columns; nil for none), sorted by
// field, a custom field as custom_fields.<name>: the trigger compares
// columns, so a changed custom_fields is compared here value by value.
// Values are PostgreSQL's jsonb text, so equal values are equal bytes.
func changes(before, after []byte) ([]historyapi.HistoryChange, error) {
	b, a, err := objects(before, after)
	if err != nil {
		return nil, err
	}
	out := []historyapi.HistoryChange{}
	for _, k := range keys(b, a) {
		if k == customFields {
			cb, ca, err := objects(b[k], a[k])
			if err != nil { // redacted as a whole ("[erased]")
				out = appendChange(out, k, b[k], a[k])
				continue
			}
			for _, f := range keys(cb, ca) {
				out = appendChange(out, customFields+"."+f, cb[f], ca[f])
			}
			continue
		}
		out = appendChange(out, k, b[k], a[k])
	}
	slices.SortFunc(out, func(x, y historyapi.HistoryChange) int { return strings.Compare(x.Field, y.Field) })
	return out, nil
}

const customFields = "custom_fields"

var null = json.RawMessage("null")

// appendChange adds field's change unless its values are the same (null
// and absent alike).
func appendChange(out []historyapi.HistoryChange, field string, from, to json.RawMessage) []historyapi.HistoryChange {
	if from == nil {
		from = null
	}
	if to == nil {
		to = null
	}
	if bytes.Equal(from, to) {
		return out
	}
	return append(out, historyapi.HistoryChange{Field: field, From: from, To: to})
}

// objects decodes two JSON objects (nil or null: empty).
func objects(x, y []byte) (map[string]json.RawMessage, map[string]json.RawMessage, error) {
	var mx, my map[string]json.RawMessage
	if len(x) > 0 {
		if err := json.Unmarshal(x, &mx); err != nil {
			return nil, nil, err
		}
	}
	if len(y) > 0 {
		if err := json.Unmarshal(y, &my); err != nil {
			return nil, nil, err
		}
	}
	return mx, my, nil
}

// keys is the union of x's and y's keys.
func keys(x, y map[string]json.RawMessage) []string {
	ks := slices.Collect(maps.Keys(x))
	for k := range y {
		if _, ok := x[k]; !ok {
			ks = append(ks, k)
		}
	}
	return ks
}
