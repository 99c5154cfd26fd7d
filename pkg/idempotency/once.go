package idempotency

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/opencrm/crm/pkg/db"
	"github.com/opencrm/crm/pkg/fault"
)

// Done is a write's typed result: the value fn returned, fresh or stored,
// and whether it was stored (a retry) rather than run now. The edge decides
// how to answer it (a 201 with the record, the Idempotent-Replayed header),
// so the store keeps no HTTP.
type Done[T any] struct {
	Value    T
	Replayed bool
	// Raw is Value's JSON as stored, set only by OnceEncoded on a fresh
	// run (a replay decodes the stored bytes into Value and leaves Raw
	// nil: a row stored by an older release may lack fields the current
	// type encodes). An edge answering Value may write Raw instead of
	// encoding Value again.
	Raw []byte
}

// ErrKeyReused is the error, a fault conflict, for a key already used with
// a different request (the edge's 409 idempotency_key_reused).
var ErrKeyReused = fault.Conflict("idempotency_key_reused", "this Idempotency-Key was used with a different request")

// Once runs fn at most once per key and stores the value it returns (JSON
// encoded) in the transaction of fn's effects. A retry with the same key
// and request gets the stored value back with Replayed; the same key with
// another request is ErrKeyReused; an empty key runs fn without protection.
// request fingerprints the call by its JSON encoding: pass the value the
// caller always passed (before typed results too), so a retry across an
// upgrade still matches.
//
// A key stored before results were typed (migration 002) holds the HTTP
// answer of a create; it is replayed from the answer body's "data" member,
// decoded into T: every such body carried the record there. T may be the
// record or a struct of some of its fields (the id alone, say).
func Once[T any](ctx context.Context, d *db.DB, key string, request any, fn func(tx pgx.Tx) (T, error)) (Done[T], error) {
	r, replayed, err := runOnce(ctx, d, key, request, ErrKeyReused, func(tx pgx.Tx) (row, error) {
		v, err := fn(tx)
		if err != nil {
			return row{}, err
		}
		return typedRow(v)
	})
	if err != nil {
		return Done[T]{}, err
	}
	v, err := value[T](key, r)
	return Done[T]{Value: v, Replayed: replayed}, err
}

// OnceEncoded is Once for a fn that returns, besides its value, that
// value's JSON encoding (byte for byte json.Marshal's): a batch of records
// whose each record was already encoded for its event builds the answer
// from those bytes instead of encoding every record again. A fresh run's
// Done holds the value as fn returned it (not decoded back from the
// stored bytes) and Raw; a replay is Once's.
func OnceEncoded[T any](ctx context.Context, d *db.DB, key string, request any, fn func(tx pgx.Tx) (T, []byte, error)) (Done[T], error) {
	var fresh T
	r, replayed, err := runOnce(ctx, d, key, request, ErrKeyReused, func(tx pgx.Tx) (row, error) {
		v, raw, err := fn(tx)
		if err != nil {
			return row{}, err
		}
		fresh = v
		return row{result: raw}, nil
	})
	if err != nil {
		return Done[T]{}, err
	}
	if !replayed {
		return Done[T]{Value: fresh, Raw: r.result}, nil
	}
	v, err := value[T](key, r)
	return Done[T]{Value: v, Replayed: true}, err
}

// Settled is one call's result in a batch: Done, or Err (ErrKeyReused
// when the key was used with a different request). Err is per call, so one
// reused key does not hold back the other calls.
type Settled[T any] struct {
	Done[T]
	Err error
}

// OnceMany is Once for a batch of calls in one transaction and a fixed
// number of round trips, whatever the batch size: that is its reason to
// exist (a caller forwarding many requests would otherwise pay Once's lock,
// read and write round trips per request). Per call it means what Once
// means:
//
//   - a key with a stored result and the same request hash is replayed
//     (Replayed), with another hash it is ErrKeyReused;
//   - a key without one runs once, inside the transaction that stores its
//     result;
//   - a later occurrence of a key within calls is a retry of the first
//     occurrence: it gets the first one's result with Replayed, or the
//     conflict if its request differs.
//
// Every key must be non-empty. fn is called once with todo, the indexes
// into calls that must run, and returns one value per todo entry in the
// same order; results are in the order of calls.
func OnceMany[T any](ctx context.Context, d *db.DB, calls []Call, fn func(tx pgx.Tx, todo []int) ([]T, error)) ([]Settled[T], error) {
	got, err := runMany(ctx, d, calls, func() error { return ErrKeyReused }, func(tx pgx.Tx, todo []int) ([]row, error) {
		vs, err := fn(tx, todo)
		if err != nil {
			return nil, err
		}
		rows := make([]row, len(vs))
		for j, v := range vs {
			if rows[j], err = typedRow(v); err != nil {
				return nil, fmt.Errorf("idempotency: value %d: %w", j, err)
			}
		}
		return rows, nil
	})
	if err != nil {
		return nil, err
	}
	out := make([]Settled[T], len(got))
	for i, g := range got {
		if g.err != nil {
			out[i].Err = g.err
			continue
		}
		v, err := value[T](calls[i].Key, g.row)
		if err != nil {
			return nil, err
		}
		out[i].Done = Done[T]{Value: v, Replayed: g.replayed}
	}
	return out, nil
}

// typedRow is the row Once stores for v.
func typedRow[T any](v T) (row, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return row{}, err
	}
	return row{result: raw}, nil
}

// value decodes the T a row holds: its result, or for a row stored before
// results were typed, the "data" member of the answer's body.
func value[T any](key string, r row) (T, error) {
	var v T
	raw := r.result
	if raw == nil {
		var body struct {
			Data json.RawMessage `json:"data"`
		}
		if err := json.Unmarshal(r.response, &body); err != nil {
			return v, fmt.Errorf("idempotency: key %q: stored answer: %w", key, err)
		}
		if body.Data == nil {
			return v, fmt.Errorf("idempotency: key %q: stored answer has no data member", key)
		}
		raw = body.Data
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		return v, fmt.Errorf("idempotency: key %q: stored result: %w", key, err)
	}
	return v, nil
}
