package store

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/opencrm/crm/pkg/contract/propertyapi"
	"github.com/opencrm/crm/pkg/customfield"
	"github.com/opencrm/crm/pkg/db"
	"github.com/opencrm/crm/pkg/fault"
	"github.com/opencrm/crm/pkg/idempotency"
	"github.com/opencrm/crm/services/leads/internal/leads"
)

// Definitions lists the custom fields of leads.
func (s *Store) Definitions(ctx context.Context) ([]customfield.Definition, error) {
	return definitions(ctx, s.db)
}

func definitions(ctx context.Context, q db.Querier) ([]customfield.Definition, error) {
	defs, err := customfield.Definitions(ctx, q, propertyapi.Leads)
	if err != nil {
		return nil, fmt.Errorf("lead custom fields: %w", err)
	}
	return defs, nil
}

// held is the values a lead holds, for its custom_fields column (NOT
// NULL: none is an empty object).
func held(l leads.Lead) customfield.Values {
	if l.CustomFields == nil {
		return customfield.Values{}
	}
	return customfield.Values(l.CustomFields)
}

// hold takes the definitions of leads for a transaction that writes
// values (customfield.Hold: none changes or goes away until commit).
func hold(ctx context.Context, tx pgx.Tx) ([]customfield.Definition, error) {
	defs, err := customfield.Hold(ctx, tx, propertyapi.Leads)
	if err != nil {
		return nil, fmt.Errorf("lead custom fields: %w", err)
	}
	return defs, nil
}

// claim keeps a written lead's unique values claimed (409 duplicate_value
// when another lead holds one), inside the write's transaction.
func claim(ctx context.Context, q db.Querier, defs []customfield.Definition, l leads.Lead) error {
	return customfield.Claim(ctx, q, propertyapi.Leads, l.ID, defs, held(l))
}

// render turns the values a lead holds (as scanned) into what it reads as:
// every defined name, null where empty.
func render(defs []customfield.Definition, l *leads.Lead) {
	l.CustomFields = customfield.Render(defs, held(*l))
}

// rendered is l rendered with the definitions q reads.
func rendered(ctx context.Context, q db.Querier, l leads.Lead) (leads.Lead, error) {
	defs, err := definitions(ctx, q)
	if err != nil {
		return leads.Lead{}, err
	}
	render(defs, &l)
	return l, nil
}

// Lookup finds the lead holding value of the unique field d.
func (s *Store) Lookup(ctx context.Context, d customfield.Definition, value string) (int64, bool, error) {
	return customfield.Lookup(ctx, s.db, propertyapi.Leads, d, value)
}

// Batch runs fn in one transaction, at most once per Idempotency-Key.
func (s *Store) Batch(ctx context.Context, key string, request any, fn func(leads.Tx) ([]leads.Result, error)) (idempotency.Done[[]leads.Result], error) {
	return idempotency.Once(ctx, s.db, key, request, func(tx pgx.Tx) ([]leads.Result, error) {
		// The definitions before any lead is locked, as Update takes them.
		defs, err := hold(ctx, tx)
		if err != nil {
			return nil, err
		}
		return fn(&batchTx{tx: tx, defs: defs, locked: map[int64]customfield.Values{}})
	})
}

// batchTx is leads.Tx on one transaction.
type batchTx struct {
	tx   pgx.Tx
	defs []customfield.Definition
	// locked holds the values of each lead Lock read, for Save.
	locked map[int64]customfield.Values
}

func (b *batchTx) Lock(ctx context.Context, id int64) (leads.Lead, bool, error) {
	l, err := get(ctx, b.tx, id, "FOR UPDATE")
	if fault.KindOf(err) == fault.KindNotFound {
		return leads.Lead{}, false, nil
	}
	if err != nil {
		return leads.Lead{}, false, err
	}
	b.locked[id] = held(l)
	return l, true, nil
}

func (b *batchTx) Insert(ctx context.Context, l leads.Lead) (leads.Lead, error) {
	return insert(ctx, b.tx, l)
}

func (b *batchTx) Save(ctx context.Context, l leads.Lead) (leads.Lead, error) {
	old, ok := b.locked[l.ID]
	if !ok {
		return leads.Lead{}, fmt.Errorf("save lead %d: not locked", l.ID)
	}
	return save(ctx, b.tx, b.defs, old, l)
}

func (b *batchTx) Delete(ctx context.Context, id int64) (bool, error) {
	err := remove(ctx, b.tx, id)
	if fault.KindOf(err) == fault.KindNotFound {
		return false, nil
	}
	return err == nil, err
}

func (b *batchTx) Lookup(ctx context.Context, d customfield.Definition, value string) (int64, bool, error) {
	return customfield.Lookup(ctx, b.tx, propertyapi.Leads, d, value)
}

func (b *batchTx) Read(ctx context.Context, ids []int64) (map[int64]leads.Lead, error) {
	rows, err := b.tx.Query(ctx, `SELECT `+Columns+` FROM leads WHERE id = ANY($1)`, ids)
	if err != nil {
		return nil, fmt.Errorf("read leads: %w", err)
	}
	ls, err := pgx.CollectRows(rows, Scan)
	if err != nil {
		return nil, fmt.Errorf("read leads: %w", err)
	}
	out := make(map[int64]leads.Lead, len(ls))
	for _, l := range ls {
		render(b.defs, &l)
		out[l.ID] = l
	}
	return out, nil
}
