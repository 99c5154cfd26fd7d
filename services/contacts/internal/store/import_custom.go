package store

import (
	"context"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/opencrm/crm/pkg/contract/propertyapi"
	"github.com/opencrm/crm/pkg/customfield"
	"github.com/opencrm/crm/services/contacts/internal/contacts"
)

// importCustom is what an import's transaction knows of custom fields once
// a batch holds values.
type importCustom struct {
	// defs are the definitions as the transaction sees them, read under
	// the definitions' shared lock.
	defs []customfield.Definition
	// users caches the user ids checked so far.
	users map[int64]bool
}

func hasCustom(r contacts.ImportRow) bool { return r.Custom != nil }

// checkCustom drops, and records as skipped, the rows whose user field
// names no user or whose unique field holds a value another contact
// holds; outside a dry run (rows then have their ids) it claims the
// unique values of the rows it keeps. The reader already refused bad
// cells and values repeated within the file. A batch without custom
// values costs nothing; one with them a query per unique field and one
// user check per distinct user id.
func (w *importWriter) checkCustom(ctx context.Context, rows []contacts.ImportRow, dryRun bool) ([]contacts.ImportRow, error) {
	if !slices.ContainsFunc(rows, hasCustom) {
		return rows, nil
	}
	if w.custom == nil {
		// Held from the first custom value to the commit: no field turns
		// unique (claiming only committed values), changes type or goes
		// away under the values the import writes.
		defs, err := customfield.Hold(ctx, w.tx, propertyapi.Contacts)
		if err != nil {
			return nil, err
		}
		w.custom = &importCustom{defs: defs, users: map[int64]bool{}}
	}
	bad := map[int]string{} // row index → why it is skipped
	if err := w.checkUsers(ctx, rows, bad); err != nil {
		return nil, err
	}
	claimed := false
	for _, d := range w.custom.defs {
		if !d.Unique {
			continue
		}
		n, err := w.claim(ctx, d, rows, bad, dryRun)
		if err != nil {
			return nil, err
		}
		claimed = claimed || n > 0
	}
	if len(bad) == 0 {
		return rows, nil
	}
	keep := rows[:0]
	var released []int64
	for i, r := range rows {
		msg, skip := bad[i]
		if !skip {
			keep = append(keep, r)
			continue
		}
		w.skipped = append(w.skipped, contacts.RowError{Row: r.Row, Message: msg})
		released = append(released, r.Contact.ID)
	}
	// A row skipped for one unique field may have claimed another's value.
	if claimed && !dryRun {
		if _, err := w.tx.Exec(ctx, `DELETE FROM custom_field_unique WHERE object = $1 AND record_id = ANY($2)`,
			propertyapi.Contacts, released); err != nil {
			return nil, err
		}
	}
	return keep, nil
}

// checkUsers marks the rows whose user field names no user.
func (w *importWriter) checkUsers(ctx context.Context, rows []contacts.ImportRow, bad map[int]string) error {
	for _, d := range w.custom.defs {
		if d.Type != customfield.User {
			continue
		}
		for i, r := range rows {
			id, ok := r.Custom[d.Name].(int64)
			if !ok || bad[i] != "" {
				continue
			}
			exists, checked := w.custom.users[id]
			if !checked {
				var err error
				if exists, err = w.users(ctx, id); err != nil {
					return err
				}
				w.custom.users[id] = exists
			}
			if !exists {
				bad[i] = contacts.CustomPrefix + d.Name + " must be the id of an existing user"
			}
		}
	}
	return nil
}

// claim marks the rows whose value of the unique field d another contact
// holds. Outside a dry run it claims the others' values in one statement
// (one that another transaction claimed meanwhile is refused by the
// claims' primary key, so uniqueness holds) and returns how many it
// claimed; a dry run only looks.
func (w *importWriter) claim(ctx context.Context, d customfield.Definition, rows []contacts.ImportRow, bad map[int]string, dryRun bool) (int, error) {
	var idx []int
	var values []string
	var ids []int64
	for i, r := range rows {
		v, ok := r.Custom[d.Name]
		if !ok || bad[i] != "" {
			continue
		}
		idx = append(idx, i)
		values = append(values, customfield.Cell(v))
		ids = append(ids, r.Contact.ID)
	}
	if len(idx) == 0 {
		return 0, nil
	}
	var res pgx.Rows
	var err error
	if dryRun {
		res, err = w.tx.Query(ctx, `SELECT value FROM custom_field_unique WHERE object = $1 AND name = $2 AND value = ANY($3)`,
			propertyapi.Contacts, d.Name, values)
	} else {
		res, err = w.tx.Query(ctx, `INSERT INTO custom_field_unique (object, name, value, record_id)
			SELECT $1, $2, v, id FROM unnest($3::text[], $4::bigint[]) AS t(v, id)
			ON CONFLICT DO NOTHING RETURNING value`, propertyapi.Contacts, d.Name, values, ids)
	}
	if err != nil {
		return 0, err
	}
	got, err := pgx.CollectRows(res, pgx.RowTo[string])
	if err != nil {
		return 0, err
	}
	set := make(map[string]bool, len(got))
	for _, v := range got {
		set[v] = true
	}
	for k, i := range idx {
		// A dry run found the taken values; a claim returned the free ones.
		if set[values[k]] == dryRun {
			bad[i] = contacts.DuplicateCustom(d.Name, rows[i].Custom[d.Name], "already exists")
		}
	}
	if dryRun {
		return 0, nil
	}
	return len(got), nil
}
