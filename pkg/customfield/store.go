package customfield

import (
	"context"
	"fmt"
	"io/fs"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/opencrm/crm/pkg/contract/identityapi"
	"github.com/opencrm/crm/pkg/contract/propertyapi"
	"github.com/opencrm/crm/pkg/customfield/migrations"
	"github.com/opencrm/crm/pkg/db"
	"github.com/opencrm/crm/pkg/fault"
	"github.com/opencrm/crm/pkg/outbox"
	"github.com/opencrm/crm/pkg/timestamp"
	"github.com/opencrm/crm/pkg/validate"
)

// Migrations is the custom-field migration set.
var Migrations fs.FS = migrations.FS

// Migrate creates the definition and unique-value tables in d's schema.
func Migrate(ctx context.Context, d *db.DB) error {
	return db.Migrate(ctx, d, "customfield", Migrations)
}

// Event types of definition changes.
const (
	EventCreated = "property.created"
	EventUpdated = "property.updated"
	EventDeleted = "property.deleted"
)

// Store keeps one context's definitions and unique values. Stream is the
// context's outbox stream (outbox.Stream("contacts")).
type Store struct {
	DB     *db.DB
	Stream string
}

const defColumns = `object, name, label, type, options, required, is_unique, description, position, created_at, updated_at`

func scanDef(row pgx.CollectableRow) (Definition, error) {
	var d Definition
	err := row.Scan(&d.Object, &d.Name, &d.Label, &d.Type, &d.Options, &d.Required, &d.Unique,
		&d.Description, &d.Position, &d.CreatedAt, &d.UpdatedAt)
	return d, err
}

// Definitions lists an object's definitions by position, then name.
func Definitions(ctx context.Context, q db.Querier, object string) ([]Definition, error) {
	rows, err := q.Query(ctx, `SELECT `+defColumns+` FROM custom_field_definitions
		WHERE object = $1 ORDER BY position, name`, object)
	if err != nil {
		return nil, err
	}
	defs, err := pgx.CollectRows(rows, scanDef)
	if defs == nil {
		defs = []Definition{}
	}
	return defs, err
}

// List lists an object's definitions.
func (s Store) List(ctx context.Context, object string) ([]Definition, error) {
	return Definitions(ctx, s.DB, object)
}

// Get returns one definition.
func (s Store) Get(ctx context.Context, object, name string) (Definition, error) {
	return get(ctx, s.DB, object, name)
}

func get(ctx context.Context, q db.Querier, object, name string) (Definition, error) {
	rows, err := q.Query(ctx, `SELECT `+defColumns+` FROM custom_field_definitions
		WHERE object = $1 AND name = $2`, object, name)
	if err != nil {
		return Definition{}, err
	}
	d, err := pgx.CollectExactlyOneRow(rows, scanDef)
	if db.IsNoRows(err) {
		return Definition{}, fault.NotFound("custom field")
	}
	return d, err
}

func lockKey(object string) int64 { return db.LockKey("customfield:" + object) }

// Hold takes, inside the caller's write transaction, the object's
// definition lock in shared mode and returns the definitions as they stay
// until commit: no field is deleted, changes type or becomes unique under
// the values the transaction writes. Writers of records share it; only a
// definition change waits.
func Hold(ctx context.Context, tx pgx.Tx, object string) ([]Definition, error) {
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock_shared($1)`, lockKey(object)); err != nil {
		return nil, err
	}
	return Definitions(ctx, tx, object)
}

// inObject runs fn in a transaction that holds the object's definition
// lock, so the count limit and name checks see every committed change.
func (s Store) inObject(ctx context.Context, object string, fn func(tx pgx.Tx) error) error {
	return s.DB.InTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, lockKey(object)); err != nil {
			return err
		}
		return fn(tx)
	})
}

// Create defines a custom field and publishes property.created. Create,
// Update and Delete record their audit entry (custom_field.*) in the same
// transaction.
func (s Store) Create(ctx context.Context, obj Object, in propertyapi.PropertyInput) (Definition, error) {
	var d Definition
	err := s.inObject(ctx, obj.Name, func(tx pgx.Tx) error {
		existing, err := Definitions(ctx, tx, obj.Name)
		if err != nil {
			return err
		}
		if err := checkNew(obj, in, existing); err != nil {
			return err
		}
		opts := in.Options
		if opts == nil {
			opts = []propertyapi.Option{}
		}
		rows, err := tx.Query(ctx, `INSERT INTO custom_field_definitions
			(object, name, label, type, options, required, is_unique, description, position)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING `+defColumns,
			obj.Name, in.Name, in.Label, in.Type, opts, in.Required, in.Unique, in.Description, in.Position)
		if err != nil {
			return err
		}
		if d, err = pgx.CollectExactlyOneRow(rows, scanDef); err != nil {
			return err
		}
		if err := outbox.Add(ctx, tx, s.Stream, EventCreated, obj.Name+"."+d.Name, d); err != nil {
			return err
		}
		return s.record(ctx, tx, identityapi.AuditFieldCreated, d, map[string]any{"label": d.Label, "type": d.Type,
			"options": d.Options, "required": d.Required, "unique": d.Unique})
	})
	return d, err
}

// Update changes a definition and publishes property.updated. Its type
// changes only while no record holds a value; an option a record holds
// may be archived but not removed; a field becomes unique only when no two
// records share a value.
func (s Store) Update(ctx context.Context, obj Object, name string, in propertyapi.PropertyUpdate) (Definition, error) {
	var d Definition
	err := s.inObject(ctx, obj.Name, func(tx pgx.Tx) error {
		old, err := get(ctx, tx, obj.Name, name)
		if err != nil {
			return err
		}
		d = old
		apply(&d, in)
		var v validate.Errors
		checkAttrs(&v, d.Label, d.Type, d.Options, d.Unique, d.Description, d.Position)
		if err := v.Err(); err != nil {
			return err
		}
		if err := s.checkChange(ctx, tx, obj, old, d); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `UPDATE custom_field_definitions SET label = $3, type = $4, options = $5,
			required = $6, is_unique = $7, description = $8, position = $9, updated_at = now()
			WHERE object = $1 AND name = $2 RETURNING `+defColumns,
			obj.Name, name, d.Label, d.Type, d.Options, d.Required, d.Unique, d.Description, d.Position)
		if err != nil {
			return err
		}
		if d, err = pgx.CollectExactlyOneRow(rows, scanDef); err != nil {
			return err
		}
		if err := outbox.Add(ctx, tx, s.Stream, EventUpdated, obj.Name+"."+d.Name, d); err != nil {
			return err
		}
		return s.record(ctx, tx, identityapi.AuditFieldUpdated, d, map[string]any{"changes": changes(old, d)})
	})
	return d, err
}

func apply(d *Definition, in propertyapi.PropertyUpdate) {
	if in.Label.Set {
		d.Label = in.Label.Value
	}
	if in.Type.Set {
		d.Type = in.Type.Value
	}
	if in.Options.Set {
		d.Options = in.Options.Value
		if d.Options == nil {
			d.Options = []propertyapi.Option{}
		}
	}
	if in.Required.Set {
		d.Required = in.Required.Value
	}
	if in.Unique.Set {
		d.Unique = in.Unique.Value
	}
	if in.Description.Set {
		d.Description = in.Description.Value
	}
	if in.Position.Set {
		d.Position = in.Position.Value
	}
}

// checkChange refuses a change the records' values contradict and keeps
// the unique claims in step with the flag.
func (s Store) checkChange(ctx context.Context, tx pgx.Tx, obj Object, old, d Definition) error {
	if d.Type != old.Type {
		held, err := holders(ctx, tx, obj, d.Name)
		if err != nil {
			return err
		}
		if held {
			return fault.Conflict("property_has_values",
				"the type of "+d.Name+" cannot change while records hold values; delete and recreate the field, or clear the values first")
		}
	}
	for _, o := range old.Options {
		if slices.ContainsFunc(d.Options, func(n propertyapi.Option) bool { return n.Value == o.Value }) {
			continue
		}
		var inUse bool
		err := tx.QueryRow(ctx, fmt.Sprintf(`SELECT EXISTS (SELECT 1 FROM %s WHERE %s)`, pgx.Identifier{obj.Table}.Sanitize(),
			optionHeld(d)), o.Value).Scan(&inUse)
		if err != nil {
			return err
		}
		if inUse {
			return fault.Conflict("option_in_use", "option "+o.Value+" of "+d.Name+" is held by records: archive it instead of removing it")
		}
	}
	switch {
	case d.Unique && !old.Unique:
		return claimAll(ctx, tx, obj, d)
	case !d.Unique && old.Unique:
		_, err := tx.Exec(ctx, `DELETE FROM custom_field_unique WHERE object = $1 AND name = $2`, obj.Name, d.Name)
		return err
	}
	return nil
}

// optionHeld is the condition "the record holds option $1 of d".
func optionHeld(d Definition) string {
	c := Column("custom_fields")
	if d.Type == MultiEnum {
		return c.json(d.Name) + " ? $1"
	}
	return c.text(d.Name) + " = $1"
}

func holders(ctx context.Context, tx pgx.Tx, obj Object, name string) (bool, error) {
	var held bool
	err := tx.QueryRow(ctx, fmt.Sprintf(`SELECT EXISTS (SELECT 1 FROM %s WHERE custom_fields ? $1)`,
		pgx.Identifier{obj.Table}.Sanitize()), name).Scan(&held)
	return held, err
}

// claimAll makes d unique over the records that already hold values:
// refused when two share one.
func claimAll(ctx context.Context, tx pgx.Tx, obj Object, d Definition) error {
	c := Column("custom_fields")
	tag, err := tx.Exec(ctx, fmt.Sprintf(`INSERT INTO custom_field_unique (object, name, value, record_id)
		SELECT $1, $2, %s, id FROM %s WHERE custom_fields ? $2
		ON CONFLICT DO NOTHING`, c.text(d.Name), pgx.Identifier{obj.Table}.Sanitize()), obj.Name, d.Name)
	if err != nil {
		return err
	}
	held, err := countHolders(ctx, tx, obj, d.Name)
	if err != nil {
		return err
	}
	if tag.RowsAffected() != held {
		return fault.Conflict("duplicate_values", d.Name+" cannot become unique: records share a value")
	}
	return nil
}

func countHolders(ctx context.Context, tx pgx.Tx, obj Object, name string) (int64, error) {
	var n int64
	err := tx.QueryRow(ctx, fmt.Sprintf(`SELECT count(*) FROM %s WHERE custom_fields ? $1`,
		pgx.Identifier{obj.Table}.Sanitize()), name).Scan(&n)
	return n, err
}

// Delete removes a definition and every value records hold of it, and
// publishes property.deleted.
func (s Store) Delete(ctx context.Context, obj Object, name string) error {
	return s.inObject(ctx, obj.Name, func(tx pgx.Tx) error {
		d, err := get(ctx, tx, obj.Name, name)
		if err != nil {
			return err
		}
		// Values first: the record table's triggers still see the
		// definition, so a count cube keyed by enum values (custom_field_enums)
		// moves the records out of the value's keys.
		removed, err := tx.Exec(ctx, fmt.Sprintf(`UPDATE %s SET custom_fields = custom_fields - $1 WHERE custom_fields ? $1`,
			pgx.Identifier{obj.Table}.Sanitize()), name)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM custom_field_definitions WHERE object = $1 AND name = $2`, obj.Name, name); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM custom_field_unique WHERE object = $1 AND name = $2`, obj.Name, name); err != nil {
			return err
		}
		d.UpdatedAt = timestamp.Now()
		if err := outbox.Add(ctx, tx, s.Stream, EventDeleted, obj.Name+"."+name, d); err != nil {
			return err
		}
		return s.record(ctx, tx, identityapi.AuditFieldDeleted, d, map[string]any{"label": d.Label, "type": d.Type,
			"values_removed": removed.RowsAffected()})
	})
}

// Claim keeps the unique values of a record already stored (an update)
// claimed, inside the caller's write transaction: its claims are dropped
// and taken again, so a value it gave up is free; a value another record
// holds is a conflict naming custom_fields.<name>, with the holder's id.
// A record just inserted holds no claim yet: ClaimNew claims its values
// without the DELETE.
func Claim(ctx context.Context, q db.Querier, object string, recordID int64, defs []Definition, values Values) error {
	var unique []string
	for _, d := range defs {
		if d.Unique {
			unique = append(unique, d.Name)
		}
	}
	if len(unique) == 0 {
		return nil
	}
	if _, err := q.Exec(ctx, `DELETE FROM custom_field_unique WHERE object = $1 AND name = ANY($2) AND record_id = $3`,
		object, unique, recordID); err != nil {
		return err
	}
	_, err := ClaimNew(ctx, q, object, defs, []int64{recordID}, []Values{values})
	return err
}

// ClaimNew claims the unique values of records just inserted, which hold
// no claim yet, inside the caller's write transaction: values[i] is what
// record ids[i] holds. One INSERT takes every claim, none runs when the
// records hold no unique value (a create without one costs no statement).
// A value another record holds (or an earlier record of ids, should two
// share one) is Duplicate with the holder's id, and at is the index in ids
// of the first record refused — the first in order, on the first of its
// unique fields in defs' order, as claiming them one by one would stop —
// and -1 when the error is no record's.
func ClaimNew(ctx context.Context, q db.Querier, object string, defs []Definition, ids []int64, values []Values) (at int, err error) {
	var names, cells []string
	var records []int64
	var of []int // index in ids of each claim
	for i, id := range ids {
		for _, d := range defs {
			if !d.Unique {
				continue
			}
			if v, ok := values[i][d.Name]; ok && v != nil {
				names, cells, records, of = append(names, d.Name), append(cells, Cell(v)), append(records, id), append(of, i)
			}
		}
	}
	if len(names) == 0 {
		return -1, nil
	}
	rows, err := q.Query(ctx, `INSERT INTO custom_field_unique (object, name, value, record_id)
		SELECT $1, n, v, r FROM unnest($2::text[], $3::text[], $4::bigint[]) AS u (n, v, r)
		ON CONFLICT DO NOTHING RETURNING name, value, record_id`, object, names, cells, records)
	if err != nil {
		return -1, err
	}
	type claim struct {
		name, value string
		record      int64
	}
	taken := map[claim]bool{}
	var c claim
	if _, err := pgx.ForEachRow(rows, []any{&c.name, &c.value, &c.record}, func() error {
		taken[c] = true
		return nil
	}); err != nil {
		return -1, err
	}
	if len(taken) == len(names) {
		return -1, nil
	}
	for j := range names {
		if taken[claim{names[j], cells[j], records[j]}] {
			continue
		}
		// A statement of its own: it sees the holder that committed
		// while the INSERT waited on it.
		var holder int64
		if err := q.QueryRow(ctx, `SELECT record_id FROM custom_field_unique WHERE object = $1 AND name = $2 AND value = $3`,
			object, names[j], cells[j]).Scan(&holder); err != nil {
			return -1, err
		}
		return of[j], Duplicate(names[j], holder)
	}
	return -1, nil
}

// Duplicate is the conflict of a unique value another record holds.
func Duplicate(name string, holder int64) error {
	e := fault.Conflict("duplicate_value", "another record already holds this "+name)
	e.Fields = []fault.Field{{Field: Field(name), Message: "is already held by another record"}}
	return e.With("existing_id", holder)
}

// Release drops a deleted record's unique claims.
func Release(ctx context.Context, q db.Querier, object string, recordID int64) error {
	_, err := q.Exec(ctx, `DELETE FROM custom_field_unique WHERE object = $1 AND record_id = $2`, object, recordID)
	return err
}

// Lookup finds the record holding value of the unique field d (an
// external id); found is false when none does.
func Lookup(ctx context.Context, q db.Querier, object string, d Definition, value string) (id int64, found bool, err error) {
	v, msg := Parse(d, value, nil)
	if msg != "" {
		return 0, false, nil
	}
	err = q.QueryRow(ctx, `SELECT record_id FROM custom_field_unique WHERE object = $1 AND name = $2 AND value = $3`,
		planEach, object, d.Name, Cell(v)).Scan(&id)
	if db.IsNoRows(err) {
		return 0, false, nil
	}
	return id, err == nil, err
}

// planEach has a lookup planned at each execution (an unnamed statement)
// rather than once per connection: a field's claims start empty, and a
// plan cached while they were (a prepared statement's generic plan, made
// after five executions) keeps scanning the whole table for each value
// as a sync fills it, until something analyzes it: 1-2 s per 100 values
// at 100,000 claims (docs/benchmarks.md, contact batch upsert).
const planEach = pgx.QueryExecModeCacheDescribe

// LookupMany is Lookup of many values with one statement: the id of the
// record holding each value (as Lookup takes it) that one holds; the
// others, and values d could not hold, are absent.
func LookupMany(ctx context.Context, q db.Querier, object string, d Definition, values []string) (map[string]int64, error) {
	found := make(map[string]int64, len(values))
	cells := make([]string, 0, len(values))
	cellOf := make(map[string][]string, len(values)) // stored value → the values given for it
	for _, value := range values {
		v, msg := Parse(d, value, nil)
		if msg != "" {
			continue
		}
		c := Cell(v)
		if _, ok := cellOf[c]; !ok {
			cells = append(cells, c)
		}
		cellOf[c] = append(cellOf[c], value)
	}
	if len(cells) == 0 {
		return found, nil
	}
	// One probe of the primary key per value, whatever the statistics:
	// "value = ANY($3)" was planned, on a table not analyzed yet (a new
	// installation, a busy server), as a filter over every claim of the
	// field (30,000 claims: 58–155 ms instead of 0.3 ms per 100 values),
	// so a sync grew quadratic in the claims it wrote.
	rows, err := q.Query(ctx, `SELECT v.value, (SELECT record_id FROM custom_field_unique u
			WHERE u.object = $1 AND u.name = $2 AND u.value = v.value)
		FROM unnest($3::text[]) AS v (value)`, planEach, object, d.Name, cells)
	if err != nil {
		return nil, err
	}
	var cell string
	var id *int64
	_, err = pgx.ForEachRow(rows, []any{&cell, &id}, func() error {
		for _, value := range cellOf[cell] {
			if id != nil {
				found[value] = *id
			}
		}
		return nil
	})
	return found, err
}

// IsUnique reports whether name is a unique field among defs.
func IsUnique(defs []Definition, name string) (Definition, bool) {
	i := slices.IndexFunc(defs, func(d Definition) bool { return d.Name == name })
	if i < 0 || !defs[i].Unique {
		return Definition{}, false
	}
	return defs[i], true
}
