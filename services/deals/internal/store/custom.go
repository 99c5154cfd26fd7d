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
	"github.com/opencrm/crm/services/deals/internal/deals"
)

// Definitions lists the custom fields of deals.
func (s *Store) Definitions(ctx context.Context) ([]customfield.Definition, error) {
	return definitions(ctx, s.db)
}

func definitions(ctx context.Context, q db.Querier) ([]customfield.Definition, error) {
	defs, err := customfield.Definitions(ctx, q, propertyapi.Deals)
	if err != nil {
		return nil, fmt.Errorf("deal custom fields: %w", err)
	}
	return defs, nil
}

// held is the values a record stores, for the custom_fields column (NOT
// NULL: none is an empty object).
func held(r deals.DealRecord) customfield.Values {
	if r.CustomFields == nil {
		return customfield.Values{}
	}
	return r.CustomFields
}

// hold takes the definitions of deals for a transaction that writes
// values (customfield.Hold: none changes or goes away until commit). A
// write holds them before it locks a deal: a definition change locks them
// first and then updates deals, so the other order could deadlock.
func hold(ctx context.Context, tx pgx.Tx) ([]customfield.Definition, error) {
	defs, err := customfield.Hold(ctx, tx, propertyapi.Deals)
	if err != nil {
		return nil, fmt.Errorf("deal custom fields: %w", err)
	}
	return defs, nil
}

// claim keeps a written deal's unique values claimed (409 duplicate_value
// when another deal holds one), inside the write's transaction.
func claim(ctx context.Context, tx pgx.Tx, defs []customfield.Definition, id int64, r deals.DealRecord) error {
	return customfield.Claim(ctx, tx, propertyapi.Deals, id, defs, held(r))
}

// render sets what a deal's custom_fields reads as: every defined name,
// null where the deal holds nothing.
func render(defs []customfield.Definition, d *deals.Deal) {
	d.CustomFields = customfield.Render(defs, d.Held)
}

// Lookup finds the deal holding value of the unique field d.
func (s *Store) Lookup(ctx context.Context, d customfield.Definition, value string) (int64, bool, error) {
	return customfield.Lookup(ctx, s.db, propertyapi.Deals, d, value)
}

// Batch runs fn in one transaction, at most once per Idempotency-Key.
func (s *Store) Batch(ctx context.Context, key string, request any, fn func(deals.Tx) ([]deals.Result, error)) (idempotency.Done[[]deals.Result], error) {
	return idempotency.Once(ctx, s.db, key, request, func(tx pgx.Tx) ([]deals.Result, error) {
		defs, err := hold(ctx, tx)
		if err != nil {
			return nil, err
		}
		return fn(batchTx{tx, defs})
	})
}

// batchTx is deals.Tx on one transaction, with the definitions it holds.
type batchTx struct {
	tx   pgx.Tx
	defs []customfield.Definition
}

func (b batchTx) Lock(ctx context.Context, id int64) (deals.Deal, bool, error) {
	d, err := lockedDeal(ctx, b.tx, id)
	if fault.KindOf(err) == fault.KindNotFound {
		return deals.Deal{}, false, nil
	}
	return d, err == nil, err
}

func (b batchTx) Insert(ctx context.Context, r deals.DealRecord) (deals.Deal, error) {
	return insertDeal(ctx, b.tx, b.defs, r)
}

func (b batchTx) Save(ctx context.Context, cur deals.Deal, r deals.DealRecord) (deals.Deal, error) {
	return saveDeal(ctx, b.tx, b.defs, cur, r)
}

func (b batchTx) Delete(ctx context.Context, id int64) (bool, error) {
	err := removeDeal(ctx, b.tx, id)
	if fault.KindOf(err) == fault.KindNotFound {
		return false, nil
	}
	return err == nil, err
}

func (b batchTx) Lookup(ctx context.Context, d customfield.Definition, value string) (int64, bool, error) {
	return customfield.Lookup(ctx, b.tx, propertyapi.Deals, d, value)
}

func (b batchTx) Read(ctx context.Context, ids []int64) (map[int64]deals.Deal, error) {
	rows, err := b.tx.Query(ctx, dealSelect+`WHERE d.id = ANY($1)`, ids)
	if err != nil {
		return nil, fmt.Errorf("read deals: %w", err)
	}
	ds, err := pgx.CollectRows(rows, scanDeal)
	if err != nil {
		return nil, fmt.Errorf("read deals: %w", err)
	}
	out := make(map[int64]deals.Deal, len(ds))
	for _, d := range ds {
		render(b.defs, &d)
		out[d.ID] = d
	}
	return out, nil
}
