// Package bulk holds the rules every batch write shares, whatever the
// record: the size bounds, problems named after the input they belong to
// (inputs[3].email), and one external id given twice. A batch is checked
// whole before anything is written, so a client fixes every input at once.
package bulk

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/opencrm/crm/pkg/contract/batchapi"
	"github.com/opencrm/crm/pkg/customfield"
	"github.com/opencrm/crm/pkg/fault"
	"github.com/opencrm/crm/pkg/problem"
)

// Errors collects the problems of a whole batch.
type Errors struct{ fields []fault.Field }

// Size checks a batch's number of inputs (field names the member:
// "inputs", "ids", "values").
func (e *Errors) Size(field string, n int) {
	switch {
	case n == 0:
		e.fields = append(e.fields, fault.Field{Field: field, Message: "must hold at least one item"})
	case n > batchapi.MaxInputs:
		e.fields = append(e.fields, fault.Field{Field: field, Message: "must hold at most " + strconv.Itoa(batchapi.MaxInputs) + " items"})
	}
}

// Add records the problem of input i: an invalid-input fault's fields are
// renamed inputs[i].<field>; any other fault is named inputs[i]. An error
// that is not a fault (the database failing) is returned for the caller
// to stop with.
func (e *Errors) Add(i int, err error) error {
	if err == nil {
		return nil
	}
	prefix := "inputs[" + strconv.Itoa(i) + "]"
	var f *fault.Error
	if !errors.As(err, &f) || f.Kind == fault.KindInternal || f.Kind == fault.KindUnavailable {
		return err
	}
	if len(f.Fields) == 0 {
		e.fields = append(e.fields, fault.Field{Field: prefix, Message: f.Detail})
		return nil
	}
	for _, fe := range f.Fields {
		e.fields = append(e.fields, fault.Field{Field: prefix + "." + fe.Field, Message: fe.Message})
	}
	return nil
}

// Field records a problem of one member of input i.
func (e *Errors) Field(i int, field, message string) {
	e.fields = append(e.fields, fault.Field{Field: "inputs[" + strconv.Itoa(i) + "]." + field, Message: message})
}

// IDs checks the ids a batch update's inputs name their records by: each
// a positive integer, no two the same (one record written twice in one
// batch would hide the first write), named inputs[i].id.
func (e *Errors) IDs(ids []int64) {
	keys := make([]string, len(ids))
	for i, id := range ids {
		if id <= 0 {
			e.Field(i, "id", "must be a positive integer")
		}
		keys[i] = fmt.Sprint(id)
	}
	e.Unique("id", keys)
}

// Forbidden tells a refusal of the caller's edit scope, which a batch
// names after the input (a 422 for the whole batch) where a single write
// answers 403: directory's check answers it as a problem, a store as a
// fault.
func Forbidden(err error) bool {
	var p *problem.Error
	return fault.KindOf(err) == fault.KindForbidden || (errors.As(err, &p) && p.Status == http.StatusForbidden)
}

// Unique records every input whose key repeats an earlier input's (an
// external id given twice in one batch); an empty key is not compared.
func (e *Errors) Unique(field string, keys []string) {
	first := map[string]int{}
	for i, k := range keys {
		if k == "" {
			continue
		}
		if j, ok := first[k]; ok {
			e.Field(i, field, "repeats inputs["+strconv.Itoa(j)+"]")
			continue
		}
		first[k] = i
	}
}

// UniqueValues records every input whose value of a unique custom field
// repeats an earlier input's, named inputs[i].custom_fields.<name>: only
// one record may hold it, and the batch is refused whole before the
// second input would fail alone at its claim inside the transaction.
// values[i] is what input i's record will hold; nil (an input already
// refused) is not compared.
func (e *Errors) UniqueValues(defs []customfield.Definition, values []customfield.Values) {
	for _, d := range defs {
		if !d.Unique {
			continue
		}
		keys := make([]string, len(values))
		for i, v := range values {
			keys[i] = customfield.Cell(v[d.Name])
		}
		e.Unique(customfield.Field(d.Name), keys)
	}
}

// ReadBy checks the form of a batch read: ids alone, or id_property with
// values, each list within the size bounds. property resolves
// id_property with the object's own definitions and message; its problem
// wins over the size of values. byProperty tells a read by the values of
// id_property.
func ReadBy(in batchapi.Read, property func(name string) error) (byProperty bool, err error) {
	var e Errors
	switch {
	case in.IDProperty == "" && len(in.Values) > 0:
		return false, fault.Invalid("id_property", "is required with values")
	case in.IDProperty == "":
		e.Size("ids", len(in.IDs))
	case len(in.IDs) > 0:
		return false, fault.Invalid("ids", "cannot be given with id_property")
	default:
		e.Size("values", len(in.Values))
		if err := property(in.IDProperty); err != nil {
			return false, err
		}
		byProperty = true
	}
	return byProperty, e.Err()
}

// Read answers a batch read whose form ReadBy accepted, inside its
// transaction: the records of in.IDs or, byProperty, of the ids lookup
// finds for in.Values (a value none holds is not_found), read at once
// and answered as Found does.
func Read[T, P any](ctx context.Context, in batchapi.Read, byProperty bool,
	lookup func(ctx context.Context, value string) (id int64, found bool, err error),
	read func(ctx context.Context, ids []int64) (map[int64]T, error), public func(T) P) ([]Result[P], error) {
	ids := in.IDs
	if byProperty {
		ids = make([]int64, len(in.Values))
		for i, v := range in.Values {
			id, _, err := lookup(ctx, v)
			if err != nil {
				return nil, err
			}
			ids[i] = id
		}
	}
	got, err := read(ctx, ids)
	if err != nil {
		return nil, err
	}
	return Found(ids, got, public), nil
}

// Found answers a batch read in the order of ids: each record got holds,
// as public renders it, with status unchanged (a read changes nothing),
// and not_found for an id it does not hold.
func Found[T, P any](ids []int64, got map[int64]T, public func(T) P) []Result[P] {
	out := make([]Result[P], len(ids))
	for i, id := range ids {
		r, ok := got[id]
		if !ok {
			out[i] = Result[P]{Status: batchapi.NotFound}
			continue
		}
		out[i] = Of(batchapi.Unchanged, public(r))
	}
	return out
}

// Err is the batch's invalid-input fault, or nil.
func (e *Errors) Err() error {
	if len(e.fields) == 0 {
		return nil
	}
	return fault.Validation(e.fields...)
}

// Request fingerprints a batch for its Idempotency-Key (its JSON encoding
// is what idempotency.Once compares): the operation with its inputs, so
// the same key on another operation, another id_property or other inputs
// is a reused key rather than a replay.
type Request struct {
	Op         string `json:"op"`
	IDProperty string `json:"id_property,omitempty"`
	Inputs     any    `json:"inputs"`
}

// Result is one input's outcome.
type Result[T any] = batchapi.Result[T]

// Of is a result holding a record.
func Of[T any](status string, record T) Result[T] { return Result[T]{Status: status, Record: &record} }
