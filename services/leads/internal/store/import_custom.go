package store

import (
	"context"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/opencrm/crm/pkg/contract/propertyapi"
	"github.com/opencrm/crm/pkg/customfield"
	"github.com/opencrm/crm/pkg/fault"
)

// importDefinitions holds the definitions of leads for the import's
// transaction (customfield.Hold: no field turns unique, changes type or
// goes away under the values it writes) and refuses the import when they
// are no longer the ones its rows were read with (read holds them): a
// field defined, changed or deleted meanwhile would be read or written
// wrong.
func importDefinitions(ctx context.Context, tx pgx.Tx, read []customfield.Definition) ([]customfield.Definition, error) {
	defs, err := customfield.Hold(ctx, tx, propertyapi.Leads)
	if err != nil {
		return nil, fmt.Errorf("import leads: custom fields: %w", err)
	}
	same := slices.EqualFunc(defs, read, func(a, b customfield.Definition) bool {
		return a.Name == b.Name && a.UpdatedAt.Equal(b.UpdatedAt.Time)
	})
	if !same {
		return nil, fault.Conflict("custom_fields_changed",
			"the custom fields of leads changed while the file was read; import it again")
	}
	return defs, nil
}

// markUnique skips the staged rows whose value of a unique field an
// earlier row to write holds, then those whose value a lead holds:
// a dry run looks the values up; an import gives the rows to write their
// lead ids (in row order) and claims their values, one statement per
// field, so a value claimed meanwhile by a single write skips its row.
// The claims of a row a later field skips are given back. A file without
// unique values costs one query per unique field, none without.
func markUnique(ctx context.Context, tx pgx.Tx, defs []customfield.Definition, dryRun bool) error {
	var unique []string
	for _, d := range defs {
		if !d.Unique {
			continue
		}
		var held bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM lead_import WHERE skip IS NULL AND custom_fields ? $1)`,
			d.Name).Scan(&held); err != nil {
			return fmt.Errorf("import leads: unique %s: %w", d.Name, err)
		}
		if held {
			unique = append(unique, d.Name)
		}
	}
	if len(unique) == 0 {
		return nil
	}
	if !dryRun {
		if _, err := tx.Exec(ctx, `UPDATE lead_import i SET id = n.id
			FROM (SELECT row, nextval('leads_id_seq') AS id
				FROM (SELECT row FROM lead_import WHERE skip IS NULL ORDER BY row) o) n
			WHERE i.row = n.row`); err != nil {
			return fmt.Errorf("import leads: ids: %w", err)
		}
	}
	for _, name := range unique {
		col := "cf." + name
		if _, err := tx.Exec(ctx, `UPDATE lead_import i SET skip = $1, skip_value = f.v, dup_of = f.first
			FROM (SELECT row, custom_fields ->> $2 AS v,
					first_value(row) OVER (PARTITION BY custom_fields ->> $2 ORDER BY row) AS first
				FROM lead_import WHERE skip IS NULL AND custom_fields ? $2) f
			WHERE i.row = f.row AND f.first <> f.row`, col, name); err != nil {
			return fmt.Errorf("import leads: unique %s in file: %w", name, err)
		}
		held := `EXISTS (SELECT 1 FROM custom_field_unique u
			WHERE u.object = $3 AND u.name = $2 AND u.value = i.custom_fields ->> $2)`
		if !dryRun {
			// The claims the statement took, by record id; the rows
			// without one lost theirs to a lead.
			held = `i.id NOT IN (SELECT record_id FROM claimed)`
		}
		if _, err := tx.Exec(ctx, `WITH claimed AS (
				INSERT INTO custom_field_unique (object, name, value, record_id)
				SELECT $3, $2, custom_fields ->> $2, id FROM lead_import
				WHERE $4 AND skip IS NULL AND custom_fields ? $2
				ON CONFLICT DO NOTHING RETURNING record_id)
			UPDATE lead_import i SET skip = $1, skip_value = i.custom_fields ->> $2
			WHERE i.skip IS NULL AND i.custom_fields ? $2 AND `+held, col, name, propertyapi.Leads, !dryRun); err != nil {
			return fmt.Errorf("import leads: unique %s: %w", name, err)
		}
	}
	if dryRun {
		return nil
	}
	if _, err := tx.Exec(ctx, `DELETE FROM custom_field_unique WHERE object = $1
		AND record_id IN (SELECT id FROM lead_import WHERE skip IS NOT NULL AND id IS NOT NULL)`, propertyapi.Leads); err != nil {
		return fmt.Errorf("import leads: release claims: %w", err)
	}
	return nil
}
