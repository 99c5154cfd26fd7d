// Package bulkhttp is the HTTP edge of an object's batch routes
// (POST /{object}/batch/create|update|upsert|read|delete): it reads the
// Idempotency-Key, decodes the body within the route's limit, runs the
// object's operation and answers batchapi.Results with the route's message
// and the replay header, so each context only wires its service.
package bulkhttp

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/opencrm/crm/pkg/auth"
	"github.com/opencrm/crm/pkg/contract/batchapi"
	"github.com/opencrm/crm/pkg/contract/historyapi"
	"github.com/opencrm/crm/pkg/contract/route"
	"github.com/opencrm/crm/pkg/history"
	"github.com/opencrm/crm/pkg/httpx"
	"github.com/opencrm/crm/pkg/idempotency"
)

// Done is a batch write's results in input order, and whether they are a
// replay of an earlier call under the same key.
type Done[R any] = idempotency.Done[[]batchapi.Result[R]]

// Ops are one object's batch operations: R the record answered, C the
// create input, U the update input (C with its id). A context adapts its
// service's methods to these shapes where they differ.
type Ops[R, C, U any] struct {
	Create func(ctx context.Context, key string, ins []C) (Done[R], error)
	Update func(ctx context.Context, key string, ins []U) (Done[R], error)
	Upsert func(ctx context.Context, key, idProperty string, ins []C) (Done[R], error)
	Read   func(ctx context.Context, in batchapi.Read) ([]batchapi.Result[R], error)
	Delete func(ctx context.Context, key string, ids []int64) (Done[R], error)
}

// Mount serves rs with ops behind the routes' guards.
func Mount[R, C, U any](mux *http.ServeMux, guards httpx.Guards, rs batchapi.Routes, ops Ops[R, C, U]) {
	guards.Mount(mux, rs.Create, write(ops, rs.Create, func(ctx context.Context, key string, in batchapi.Batch[C]) (Done[R], error) {
		return ops.Create(ctx, key, in.Inputs)
	}))
	guards.Mount(mux, rs.Update, write(ops, rs.Update, func(ctx context.Context, key string, in batchapi.Batch[U]) (Done[R], error) {
		return ops.Update(ctx, key, in.Inputs)
	}))
	guards.Mount(mux, rs.Upsert, write(ops, rs.Upsert, func(ctx context.Context, key string, in batchapi.Upsert[C]) (Done[R], error) {
		return ops.Upsert(ctx, key, in.IDProperty, in.Inputs)
	}))
	guards.Mount(mux, rs.Delete, write(ops, rs.Delete, func(ctx context.Context, key string, in batchapi.Delete) (Done[R], error) {
		return ops.Delete(ctx, key, in.IDs)
	}))
	guards.Mount(mux, rs.Read, httpx.HandlerFunc(func(w http.ResponseWriter, r *http.Request) error {
		var in batchapi.Read
		if err := httpx.Decode(w, r, &in, rs.Read.Limit()); err != nil {
			return err
		}
		res, err := ops.Read(r.Context(), in)
		if err != nil {
			return err
		}
		answer(w, rs.Read, Done[R]{Value: res})
		return nil
	}))
}

// userKey is the Idempotency-Key kept under "batch:" and the caller's id,
// apart from the keys a service's single writes choose and per user, so
// one caller's key never answers another's batch.
func userKey(r *http.Request) (string, error) {
	k, err := idempotency.Key(r)
	if k == "" || err != nil {
		return "", err
	}
	return "batch:" + strconv.FormatInt(auth.FromContext(r.Context()).UserID(), 10) + ":" + k, nil
}

// Owned adapts a create that takes the new records' owner: the caller.
func Owned[R, C any](create func(ctx context.Context, key string, ins []C, owner *int64) (Done[R], error)) func(context.Context, string, []C) (Done[R], error) {
	return func(ctx context.Context, key string, ins []C) (Done[R], error) {
		return create(ctx, key, ins, caller(ctx))
	}
}

// OwnedUpsert adapts an upsert that takes the created records' owner: the
// caller.
func OwnedUpsert[R, C any](upsert func(ctx context.Context, key, idProperty string, ins []C, owner *int64) (Done[R], error)) func(context.Context, string, string, []C) (Done[R], error) {
	return func(ctx context.Context, key, idProperty string, ins []C) (Done[R], error) {
		return upsert(ctx, key, idProperty, ins, caller(ctx))
	}
}

// caller is the signed-in user's id, nil without one.
func caller(ctx context.Context) *int64 {
	c := auth.FromContext(ctx)
	if c == nil {
		return nil
	}
	id := c.UserID()
	return &id
}

// write is a batch write's handler: the key read before the body is
// decoded, so a bad key is answered without reading the body.
func write[R, C, U, B any](ops Ops[R, C, U], rt route.Route, run func(ctx context.Context, key string, in B) (Done[R], error)) httpx.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		k, err := userKey(r)
		if err != nil {
			return err
		}
		var in B
		if err := httpx.Decode(w, r, &in, rt.Limit()); err != nil {
			return err
		}
		done, err := run(history.WithVia(r.Context(), historyapi.ViaBatch), k, in)
		if err != nil {
			return err
		}
		answer(w, rt, done)
		return nil
	}
}

// answer writes 200 with the results in input order and rt's message word
// for word (the document shows it), a replay marked Idempotent-Replayed.
// Results already encoded (done.Raw, which is json.Marshal(done.Value))
// are written as they are, in the bytes httpx.JSON would write: encoding
// 100 records again is a good part of a batch's CPU.
func answer[R any](w http.ResponseWriter, rt route.Route, done Done[R]) {
	idempotency.MarkReplayed(w, done.Replayed)
	if done.Raw == nil {
		httpx.JSON(w, http.StatusOK, batchapi.Results[R]{Success: true, Data: done.Value, Message: rt.Message})
		return
	}
	body := make([]byte, 0, len(done.Raw)+len(rt.Message)+48)
	body = append(body, `{"success":true,"data":`...)
	body = append(body, done.Raw...)
	if rt.Message != "" {
		msg, _ := json.Marshal(rt.Message) // a string always encodes
		body = append(append(body, `,"message":`...), msg...)
	}
	body = append(body, "}\n"...)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
}

// ByIDProperty serves a record's GET: with ?id_property=<name> (present,
// even empty, which the lookup refuses) by the path's value of that
// unique property, as batch upserts and reads name records; otherwise
// with byID.
func ByIDProperty[T any](byID httpx.HandlerFunc, by func(ctx context.Context, name, value string) (T, error)) httpx.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		q := r.URL.Query()
		if !q.Has(batchapi.IDProperty.Name) {
			return byID(w, r)
		}
		v, err := by(r.Context(), q.Get(batchapi.IDProperty.Name), r.PathValue("id"))
		if err != nil {
			return err
		}
		httpx.OK(w, v)
		return nil
	}
}
