package deals

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/opencrm/crm/pkg/bulk"
	"github.com/opencrm/crm/pkg/contract/batchapi"
	"github.com/opencrm/crm/pkg/contract/dealsapi"
	"github.com/opencrm/crm/pkg/customfield"
	"github.com/opencrm/crm/pkg/fault"
	"github.com/opencrm/crm/pkg/idempotency"
	"github.com/opencrm/crm/pkg/patch"
)

// Result is one input's outcome in a batch, the deal in its public form
// (as an idempotent write keeps it).
type Result = bulk.Result[dealsapi.Deal]

// Tx is one batch's transaction: the deals it locks and writes, each
// write with its event and unique values, as the single writes do.
type Tx interface {
	// Lock locks a deal's row and reads it; found is false when there is
	// none.
	Lock(ctx context.Context, id int64) (d Deal, found bool, err error)
	Insert(ctx context.Context, rec DealRecord) (Deal, error)
	// Save writes the record of cur, a locked deal.
	Save(ctx context.Context, cur Deal, rec DealRecord) (Deal, error)
	// Delete removes a deal, its quotes and its unique values.
	Delete(ctx context.Context, id int64) (found bool, err error)
	// Lookup finds the deal holding value of the unique field d.
	Lookup(ctx context.Context, d customfield.Definition, value string) (id int64, found bool, err error)
	// Read returns the deals of ids that exist, by id.
	Read(ctx context.Context, ids []int64) (map[int64]Deal, error)
}

// Batcher runs batches; the store implements it.
type Batcher interface {
	// Batch runs fn in one transaction, at most once per Idempotency-Key
	// (an empty key runs it each time): a retry with the same key and
	// request gets the stored results back.
	Batch(ctx context.Context, key string, request any, fn func(Tx) ([]Result, error)) (idempotency.Done[[]Result], error)
}

// written names a write's refusal found inside the transaction (a stage
// deleted meanwhile) after input i, as the checks before it are named.
func written(i int, err error) error {
	if fault.KindOf(err) != fault.KindInvalid {
		return err
	}
	var errs bulk.Errors
	if e := errs.Add(i, err); e != nil {
		return e
	}
	return errs.Err()
}

// BatchCreate creates every input, or none: each is checked as a single
// create is (the caller is the assignee when an input names none), and any
// problem is one 422 naming inputs[i].<field>.
func (s *Service) BatchCreate(ctx context.Context, key string, ins []dealsapi.DealInput, owner *int64) (idempotency.Done[[]Result], error) {
	var errs bulk.Errors
	errs.Size("inputs", len(ins))
	if err := errs.Err(); err != nil {
		return idempotency.Done[[]Result]{}, err
	}
	defs, err := s.store.Definitions(ctx)
	if err != nil {
		return idempotency.Done[[]Result]{}, err
	}
	recs := make([]DealRecord, len(ins))
	values := make([]customfield.Values, len(ins))
	for i, in := range ins {
		rec, err := s.newRecord(ctx, &errs, i, in, owner, defs)
		if err != nil {
			return idempotency.Done[[]Result]{}, err
		}
		recs[i], values[i] = rec, rec.CustomFields
	}
	errs.UniqueValues(defs, values)
	if err := errs.Err(); err != nil {
		return idempotency.Done[[]Result]{}, err
	}
	return s.store.Batch(ctx, key, bulk.Request{Op: "create", Inputs: ins}, func(tx Tx) ([]Result, error) {
		out := make([]Result, len(recs))
		for i, rec := range recs {
			d, err := tx.Insert(ctx, rec)
			if err != nil {
				return nil, written(i, err)
			}
			out[i] = bulk.Of(batchapi.Created, d.Public())
		}
		return out, nil
	})
}

// newRecord checks input i of a batch as a single create checks it, the
// caller the assignee when it names none; its problem is recorded on errs
// and only a failure to check (the database) is returned.
func (s *Service) newRecord(ctx context.Context, errs *bulk.Errors, i int, in dealsapi.DealInput, owner *int64, defs []customfield.Definition) (DealRecord, error) {
	if !in.AssignedTo.Set && owner != nil {
		in.AssignedTo = patch.Of(*owner)
	}
	refs, err := s.lookupRefs(ctx, in, nil, defs)
	if err != nil {
		return DealRecord{}, err
	}
	rec, err := dealRecord(in, nil, refs)
	return rec, errs.Add(i, err)
}

// target is a deal a batch input changes: its id, the references its
// input names (looked up before any lock, as a single update does) and
// the input itself.
type target struct {
	id   int64
	refs dealRefs
	in   dealsapi.DealInput
}

// prepare checks that the caller may change deal id and looks up what in
// refers to; a deal that does not exist is a 422 naming inputs[i].id.
func (s *Service) prepare(ctx context.Context, errs *bulk.Errors, i int, id int64, in dealsapi.DealInput, defs []customfield.Definition) (target, error) {
	cur, err := s.store.GetDeal(ctx, id)
	if fault.KindOf(err) == fault.KindNotFound {
		errs.Field(i, "id", "is not an existing deal")
		return target{}, nil
	}
	if err != nil {
		return target{}, err
	}
	if err := s.writable(ctx, id); err != nil {
		if !bulk.Forbidden(err) {
			return target{}, err
		}
		errs.Field(i, "id", "is a deal you may not change")
		return target{}, nil
	}
	refs, err := s.lookupRefs(ctx, in, &cur, defs)
	return target{id: id, refs: refs, in: in}, err
}

// writable refuses (forbidden) unless the caller may change deal id, as
// the single writes' guard does.
func (s *Service) writable(ctx context.Context, id int64) error {
	o, err := s.store.DealOwner(ctx, id)
	if err != nil {
		return err
	}
	return s.store.CanWrite(ctx, o)
}

// change applies t's input to its deal under the transaction's lock and
// writes it when anything changed; a deal the input leaves as it was is
// unchanged (no write, no event).
func change(ctx context.Context, tx Tx, i int, t target) (Result, error) {
	cur, found, err := tx.Lock(ctx, t.id)
	if err != nil {
		return Result{}, err
	}
	if !found {
		return Result{}, written(i, fault.Invalid("id", "is not an existing deal"))
	}
	rec, err := dealRecord(t.in, &cur, t.refs)
	if err != nil {
		return Result{}, written(i, err)
	}
	same, err := sameRecord(cur.Record(), rec)
	if err != nil {
		return Result{}, err
	}
	if same {
		return bulk.Of(batchapi.Unchanged, cur.Public()), nil
	}
	d, err := tx.Save(ctx, cur, rec)
	if err != nil {
		return Result{}, written(i, err)
	}
	return bulk.Of(batchapi.Updated, d.Public()), nil
}

// sameRecord tells whether two records store the same: compared as JSON,
// so equal amounts of other scales and a custom value read back from the
// database are the same.
func sameRecord(a, b DealRecord) (bool, error) {
	ja, err := json.Marshal(a)
	if err != nil {
		return false, err
	}
	jb, err := json.Marshal(b)
	if err != nil {
		return false, err
	}
	return string(ja) == string(jb), nil
}

// BatchUpdate changes every input's deal, or none: an unknown id or a deal
// outside the caller's edit scope is a 422 naming inputs[i].id, as is any
// problem of the body.
func (s *Service) BatchUpdate(ctx context.Context, key string, ins []dealsapi.DealUpdate) (idempotency.Done[[]Result], error) {
	var errs bulk.Errors
	errs.Size("inputs", len(ins))
	ids := make([]int64, len(ins))
	for i, in := range ins {
		ids[i] = in.ID
	}
	errs.IDs(ids)
	if err := errs.Err(); err != nil {
		return idempotency.Done[[]Result]{}, err
	}
	defs, err := s.store.Definitions(ctx)
	if err != nil {
		return idempotency.Done[[]Result]{}, err
	}
	ts := make([]target, len(ins))
	for i, in := range ins {
		if ts[i], err = s.prepare(ctx, &errs, i, in.ID, in.DealInput, defs); err != nil {
			return idempotency.Done[[]Result]{}, err
		}
	}
	if err := errs.Err(); err != nil {
		return idempotency.Done[[]Result]{}, err
	}
	return s.store.Batch(ctx, key, bulk.Request{Op: "update", Inputs: ins}, func(tx Tx) ([]Result, error) {
		out := make([]Result, len(ts))
		for i, t := range ts {
			r, err := change(ctx, tx, i, t)
			if err != nil {
				return nil, err
			}
			out[i] = r
		}
		return out, nil
	})
}

// idProperty resolves a batch's id_property: a unique custom field of
// deals (deals have no external id of their own).
func idProperty(defs []customfield.Definition, name string) (customfield.Definition, error) {
	d, ok := customfield.IsUnique(defs, strings.TrimSpace(name))
	if !ok {
		return customfield.Definition{}, fault.Invalid("id_property", "must name a unique custom field of deals")
	}
	return d, nil
}

// keyOf is input in's value of the unique field d as the field holds it
// (so two spellings of one number are one key), or why it has none.
func keyOf(d customfield.Definition, in dealsapi.DealInput) (string, string) {
	raw, ok := in.CustomFields[d.Name]
	var held any
	if !ok || json.Unmarshal(raw, &held) != nil || held == nil {
		return "", "is required: it identifies the deal"
	}
	var text string
	if json.Unmarshal(raw, &text) != nil {
		text = string(raw)
	}
	v, msg := customfield.Parse(d, text, nil)
	if msg != "" {
		return "", msg
	}
	return customfield.Cell(v), ""
}

// BatchUpsert updates the deal each input's id_property value names, or
// creates one when none holds it. Each input must carry a value of the
// field, no two the same.
func (s *Service) BatchUpsert(ctx context.Context, key, property string, ins []dealsapi.DealInput, owner *int64) (idempotency.Done[[]Result], error) {
	var errs bulk.Errors
	errs.Size("inputs", len(ins))
	defs, err := s.store.Definitions(ctx)
	if err != nil {
		return idempotency.Done[[]Result]{}, err
	}
	d, err := idProperty(defs, property)
	if err != nil {
		return idempotency.Done[[]Result]{}, err
	}
	field := customfield.Field(d.Name)
	keys := make([]string, len(ins))
	for i, in := range ins {
		k, msg := keyOf(d, in)
		if msg != "" {
			errs.Field(i, field, msg)
		}
		keys[i] = k
	}
	errs.Unique(field, keys)
	if err := errs.Err(); err != nil {
		return idempotency.Done[[]Result]{}, err
	}
	// Which inputs update is decided here, before any lock, as a single
	// update looks its references up; the transaction checks it still
	// holds.
	ts := make([]target, len(ins))
	recs := make([]*DealRecord, len(ins))
	for i, in := range ins {
		id, found, err := s.store.Lookup(ctx, d, keys[i])
		if err != nil {
			return idempotency.Done[[]Result]{}, err
		}
		if found {
			if ts[i], err = s.prepare(ctx, &errs, i, id, in, defs); err != nil {
				return idempotency.Done[[]Result]{}, err
			}
			continue
		}
		rec, err := s.newRecord(ctx, &errs, i, in, owner, defs)
		if err != nil {
			return idempotency.Done[[]Result]{}, err
		}
		recs[i] = &rec
	}
	if err := errs.Err(); err != nil {
		return idempotency.Done[[]Result]{}, err
	}
	return s.store.Batch(ctx, key, bulk.Request{Op: "upsert:" + d.Name, Inputs: ins}, func(tx Tx) ([]Result, error) {
		out := make([]Result, len(ins))
		for i := range ins {
			id, found, err := tx.Lookup(ctx, d, keys[i])
			if err != nil {
				return nil, err
			}
			if found != (recs[i] == nil) || (found && id != ts[i].id) {
				return nil, fault.Conflict("concurrent_change", "a deal's "+d.Name+" changed while the batch was checked; send it again")
			}
			if found {
				if out[i], err = change(ctx, tx, i, ts[i]); err != nil {
					return nil, err
				}
				continue
			}
			created, err := tx.Insert(ctx, *recs[i])
			if err != nil {
				return nil, written(i, err)
			}
			out[i] = bulk.Of(batchapi.Created, created.Public())
		}
		return out, nil
	})
}

// BatchRead reads deals by id, or by the values of a unique custom field;
// one that does not exist is not_found.
func (s *Service) BatchRead(ctx context.Context, in batchapi.Read) ([]Result, error) {
	var d customfield.Definition
	byProperty, err := bulk.ReadBy(in, func(name string) error {
		defs, err := s.store.Definitions(ctx)
		if err != nil {
			return err
		}
		d, err = idProperty(defs, name)
		return err
	})
	if err != nil {
		return nil, err
	}
	done, err := s.store.Batch(ctx, "", nil, func(tx Tx) ([]Result, error) {
		lookup := func(ctx context.Context, v string) (int64, bool, error) { return tx.Lookup(ctx, d, v) }
		return bulk.Read(ctx, in, byProperty, lookup, tx.Read, Deal.Public)
	})
	return done.Value, err
}

// BatchDelete deletes the deals of ids (their quotes with them), or none:
// a deal outside the caller's edit scope is a 422 naming ids[i]; one that
// does not exist is not_found.
func (s *Service) BatchDelete(ctx context.Context, key string, ids []int64) (idempotency.Done[[]Result], error) {
	var errs bulk.Errors
	errs.Size("ids", len(ids))
	if err := errs.Err(); err != nil {
		return idempotency.Done[[]Result]{}, err
	}
	var bad []fault.Field
	for i, id := range ids {
		err := s.writable(ctx, id)
		switch {
		case err == nil || fault.KindOf(err) == fault.KindNotFound:
		case bulk.Forbidden(err):
			bad = append(bad, fault.Field{Field: fmt.Sprintf("ids[%d]", i), Message: "is a deal you may not change"})
		default:
			return idempotency.Done[[]Result]{}, err
		}
	}
	if len(bad) > 0 {
		return idempotency.Done[[]Result]{}, fault.Validation(bad...)
	}
	return s.store.Batch(ctx, key, bulk.Request{Op: "delete", Inputs: ids}, func(tx Tx) ([]Result, error) {
		out := make([]Result, len(ids))
		for i, id := range ids {
			found, err := tx.Delete(ctx, id)
			if err != nil {
				return nil, err
			}
			out[i] = Result{Status: batchapi.Deleted}
			if !found {
				out[i] = Result{Status: batchapi.NotFound}
			}
		}
		return out, nil
	})
}

// GetDealBy reads the deal whose value of the unique custom field property
// is value (404 when none).
func (s *Service) GetDealBy(ctx context.Context, property, value string) (Deal, error) {
	defs, err := s.store.Definitions(ctx)
	if err != nil {
		return Deal{}, err
	}
	d, err := idProperty(defs, property)
	if err != nil {
		return Deal{}, err
	}
	id, found, err := s.store.Lookup(ctx, d, value)
	if err != nil {
		return Deal{}, err
	}
	if !found {
		return Deal{}, fault.NotFound("deal")
	}
	return s.store.GetDeal(ctx, id)
}
