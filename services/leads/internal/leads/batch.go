package leads

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/opencrm/crm/pkg/bulk"
	"github.com/opencrm/crm/pkg/contract/batchapi"
	"github.com/opencrm/crm/pkg/contract/leadsapi"
	"github.com/opencrm/crm/pkg/customfield"
	"github.com/opencrm/crm/pkg/directory"
	"github.com/opencrm/crm/pkg/fault"
	"github.com/opencrm/crm/pkg/idempotency"
)

// UpdateInput is one input of a batch update: a write body with its lead.
type UpdateInput = leadsapi.LeadUpdate

// Result is one input's outcome in a batch.
type Result = bulk.Result[Lead]

// Tx is one batch's transaction: the leads it locks and writes, each write
// with its event, as the single writes do.
type Tx interface {
	// Lock reads a lead FOR UPDATE as stored (CustomFields holds its
	// values); found is false when there is none.
	Lock(ctx context.Context, id int64) (l Lead, found bool, err error)
	Insert(ctx context.Context, l Lead) (Lead, error)
	// Save writes the writable fields of a lead Lock read back.
	Save(ctx context.Context, l Lead) (Lead, error)
	// Delete removes a lead, its notes, tasks and unique values.
	Delete(ctx context.Context, id int64) (found bool, err error)
	// Lookup finds the lead holding value of the unique field d.
	Lookup(ctx context.Context, d customfield.Definition, value string) (id int64, found bool, err error)
	// Read returns the leads of ids that exist, rendered, by id.
	Read(ctx context.Context, ids []int64) (map[int64]Lead, error)
}

// Batcher runs batches; the store implements it.
type Batcher interface {
	// Batch runs fn in one transaction, at most once per Idempotency-Key
	// (an empty key runs it each time): a retry with the same key and
	// request gets the stored results back.
	Batch(ctx context.Context, key string, request any, fn func(Tx) ([]Result, error)) (idempotency.Done[[]Result], error)
}

// BatchCreate creates every input, or none: each is checked as a single
// create is, and any problem is one 422 naming inputs[i].<field>.
func (s *Service) BatchCreate(ctx context.Context, key string, ins []Input, createdBy *int64) (idempotency.Done[[]Result], error) {
	var errs bulk.Errors
	errs.Size("inputs", len(ins))
	if err := errs.Err(); err != nil {
		return idempotency.Done[[]Result]{}, err
	}
	defs, err := s.store.Definitions(ctx)
	if err != nil {
		return idempotency.Done[[]Result]{}, err
	}
	users := knownUsers(s.store.UserExists)
	ls := make([]Lead, len(ins))
	for i, in := range ins {
		ls[i] = Lead{CreatedBy: createdBy}
		if err := errs.Add(i, ApplyAll(ctx, &ls[i], in, defs, users)); err != nil {
			return idempotency.Done[[]Result]{}, err
		}
	}
	if err := errs.Err(); err != nil {
		return idempotency.Done[[]Result]{}, err
	}
	return s.store.Batch(ctx, key, bulk.Request{Op: "create", Inputs: ins}, func(tx Tx) ([]Result, error) {
		out := make([]Result, len(ls))
		for i, l := range ls {
			created, err := tx.Insert(ctx, l)
			if err != nil {
				return nil, err
			}
			out[i] = bulk.Of(batchapi.Created, created)
		}
		return out, nil
	})
}

// BatchUpdate changes every input's lead, or none: an unknown id or a lead
// outside the caller's edit scope is a 422 naming inputs[i].id, as is any
// problem of a body (inputs[i].<field>), so the batch is validated whole.
// A lead the input leaves as it was is unchanged (no write, no event).
func (s *Service) BatchUpdate(ctx context.Context, key string, ins []UpdateInput) (idempotency.Done[[]Result], error) {
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
	users := knownUsers(s.store.UserExists)
	for _, in := range ins {
		if err := prefetch(ctx, users, defs, in.LeadInput); err != nil {
			return idempotency.Done[[]Result]{}, err
		}
	}
	return s.store.Batch(ctx, key, bulk.Request{Op: "update", Inputs: ins}, func(tx Tx) ([]Result, error) {
		var errs bulk.Errors
		out := make([]Result, len(ins))
		write := make([]bool, len(ins))
		ls := make([]Lead, len(ins))
		for i, in := range ins {
			l, found, err := tx.Lock(ctx, in.ID)
			if err != nil {
				return nil, err
			}
			if !found {
				errs.Field(i, "id", "is not an existing lead")
				continue
			}
			if err := s.writable(ctx, l); err != nil {
				if !bulk.Forbidden(err) {
					return nil, err
				}
				errs.Field(i, "id", "is a lead you may not change")
				continue
			}
			changed, err := s.change(ctx, &l, in.LeadInput, defs, users)
			if err := errs.Add(i, err); err != nil {
				return nil, err
			}
			ls[i], write[i] = l, changed
		}
		if err := errs.Err(); err != nil {
			return nil, err
		}
		for i, l := range ls {
			if !write[i] {
				out[i] = bulk.Of(batchapi.Unchanged, l)
				continue
			}
			saved, err := tx.Save(ctx, l)
			if err != nil {
				return nil, err
			}
			out[i] = bulk.Of(batchapi.Updated, saved)
		}
		return renderUnchanged(ctx, tx, out)
	})
}

// writable refuses (forbidden) unless the caller may change lead l, as the
// single writes' guard does.
func (s *Service) writable(ctx context.Context, l Lead) error {
	return s.store.CanWrite(ctx, directory.Owner{AssignedTo: l.AssignedTo, CreatedBy: l.CreatedBy})
}

// change applies in to the locked lead l, which the caller may change, and
// tells whether anything changed.
func (s *Service) change(ctx context.Context, l *Lead, in Input, defs []customfield.Definition, users UserChecker) (bool, error) {
	before, err := json.Marshal(l)
	if err != nil {
		return false, err
	}
	if err := ApplyAll(ctx, l, in, defs, users); err != nil {
		return false, err
	}
	after, err := json.Marshal(l)
	if err != nil {
		return false, err
	}
	return string(before) != string(after), nil
}

// renderUnchanged re-reads the unchanged leads of out, which hold their
// stored values, so every record reads alike.
func renderUnchanged(ctx context.Context, tx Tx, out []Result) ([]Result, error) {
	var ids []int64
	for _, r := range out {
		if r.Status == batchapi.Unchanged {
			ids = append(ids, r.Record.ID)
		}
	}
	if len(ids) == 0 {
		return out, nil
	}
	got, err := tx.Read(ctx, ids)
	if err != nil {
		return nil, err
	}
	for i, r := range out {
		if r.Status == batchapi.Unchanged {
			out[i] = bulk.Of(batchapi.Unchanged, got[r.Record.ID])
		}
	}
	return out, nil
}

// idProperty resolves a batch's id_property: a unique custom field of
// leads (leads have no external id of their own).
func idProperty(defs []customfield.Definition, name string) (customfield.Definition, error) {
	d, ok := customfield.IsUnique(defs, name)
	if !ok {
		return customfield.Definition{}, fault.Invalid("id_property", "must name a unique custom field of leads")
	}
	return d, nil
}

// BatchUpsert updates the lead each input's id_property value names, or
// creates one when none holds it. Each input must carry a value of the
// field, no two the same.
func (s *Service) BatchUpsert(ctx context.Context, key, property string, ins []Input, createdBy *int64) (idempotency.Done[[]Result], error) {
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
	values := make([]string, len(ins))
	for i, in := range ins {
		// The key is the value as the field holds it (canonical), so two
		// spellings of one number are one key.
		held, err := customfield.Check(ctx, []customfield.Definition{d}, nil,
			customfield.Input{d.Name: in.CustomFields[d.Name]}, nil)
		if err := errs.Add(i, err); err != nil {
			return idempotency.Done[[]Result]{}, err
		}
		if values[i] = customfield.Cell(held[d.Name]); err == nil && values[i] == "" {
			errs.Field(i, field, "is required: it identifies the lead")
		}
	}
	errs.Unique(field, values)
	if err := errs.Err(); err != nil {
		return idempotency.Done[[]Result]{}, err
	}
	users := knownUsers(s.store.UserExists)
	for _, in := range ins {
		if err := prefetch(ctx, users, defs, in); err != nil {
			return idempotency.Done[[]Result]{}, err
		}
	}
	return s.store.Batch(ctx, key, bulk.Request{Op: "upsert:" + d.Name, Inputs: ins}, func(tx Tx) ([]Result, error) {
		var errs bulk.Errors
		out := make([]Result, len(ins))
		ls := make([]Lead, len(ins))
		status := make([]string, len(ins))
		for i, in := range ins {
			id, found, err := tx.Lookup(ctx, d, values[i])
			if err != nil {
				return nil, err
			}
			if !found {
				ls[i], status[i] = Lead{CreatedBy: createdBy}, batchapi.Created
				if err := errs.Add(i, ApplyAll(ctx, &ls[i], in, defs, users)); err != nil {
					return nil, err
				}
				continue
			}
			l, found, err := tx.Lock(ctx, id)
			if err != nil {
				return nil, err
			}
			if !found {
				return nil, fmt.Errorf("upsert leads: lead %d holds %s but does not exist", id, d.Name)
			}
			// A lead outside the caller's edit scope is the input's
			// problem, as in an update: the batch is checked whole.
			if err := s.writable(ctx, l); err != nil {
				if !bulk.Forbidden(err) {
					return nil, err
				}
				errs.Field(i, customfield.Field(d.Name), "is held by a lead you may not change")
				continue
			}
			changed, err := s.change(ctx, &l, in, defs, users)
			if err := errs.Add(i, err); err != nil {
				return nil, err
			}
			ls[i], status[i] = l, batchapi.Unchanged
			if changed {
				status[i] = batchapi.Updated
			}
		}
		if err := errs.Err(); err != nil {
			return nil, err
		}
		for i, l := range ls {
			var err error
			switch status[i] {
			case batchapi.Created:
				l, err = tx.Insert(ctx, l)
			case batchapi.Updated:
				l, err = tx.Save(ctx, l)
			}
			if err != nil {
				return nil, err
			}
			out[i] = bulk.Of(status[i], l)
		}
		return renderUnchanged(ctx, tx, out)
	})
}

// BatchRead reads leads by id, or by the values of a unique custom field;
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
		return bulk.Read(ctx, in, byProperty, lookup, tx.Read, func(l Lead) Lead { return l })
	})
	return done.Value, err
}

// BatchDelete deletes the leads of ids, or none: a lead outside the
// caller's edit scope is a 422 naming ids[i], as is an id given twice
// (inputs[i].id), so the batch is validated whole; one that does not
// exist is not_found.
func (s *Service) BatchDelete(ctx context.Context, key string, ids []int64) (idempotency.Done[[]Result], error) {
	var errs bulk.Errors
	errs.Size("ids", len(ids))
	keys := make([]string, len(ids))
	for i, id := range ids {
		keys[i] = fmt.Sprint(id)
	}
	errs.Unique("id", keys)
	if err := errs.Err(); err != nil {
		return idempotency.Done[[]Result]{}, err
	}
	return s.store.Batch(ctx, key, bulk.Request{Op: "delete", Inputs: ids}, func(tx Tx) ([]Result, error) {
		var bad []fault.Field
		out := make([]Result, len(ids))
		for i, id := range ids {
			l, found, err := tx.Lock(ctx, id)
			if err != nil {
				return nil, err
			}
			if !found {
				out[i] = Result{Status: batchapi.NotFound}
				continue
			}
			if err := s.writable(ctx, l); err != nil {
				if !bulk.Forbidden(err) {
					return nil, err
				}
				bad = append(bad, fault.Field{Field: fmt.Sprintf("ids[%d]", i), Message: "is a lead you may not change"})
			}
		}
		if len(bad) > 0 {
			return nil, fault.Validation(bad...)
		}
		for i, id := range ids {
			if out[i].Status == batchapi.NotFound {
				continue
			}
			if _, err := tx.Delete(ctx, id); err != nil {
				return nil, err
			}
			out[i] = Result{Status: batchapi.Deleted}
		}
		return out, nil
	})
}

// GetBy reads the lead whose value of the unique custom field property is
// value (404 when none).
func (s *Service) GetBy(ctx context.Context, property, value string) (Lead, error) {
	defs, err := s.store.Definitions(ctx)
	if err != nil {
		return Lead{}, err
	}
	d, err := idProperty(defs, strings.TrimSpace(property))
	if err != nil {
		return Lead{}, err
	}
	id, found, err := s.store.Lookup(ctx, d, value)
	if err != nil {
		return Lead{}, err
	}
	if !found {
		return Lead{}, fault.NotFound("lead")
	}
	return s.store.Get(ctx, id)
}
