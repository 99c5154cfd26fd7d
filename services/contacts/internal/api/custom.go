package api

import (
	"context"
	"net/http"
	"reflect"
	"strings"

	"github.com/opencrm/crm/pkg/contract/batchapi"
	"github.com/opencrm/crm/pkg/contract/contactsapi"
	"github.com/opencrm/crm/pkg/contract/propertyapi"
	"github.com/opencrm/crm/pkg/contract/route"
	"github.com/opencrm/crm/pkg/customfield"
	"github.com/opencrm/crm/pkg/customfield/propertyhttp"
	"github.com/opencrm/crm/pkg/db"
	"github.com/opencrm/crm/pkg/httpx"
	"github.com/opencrm/crm/pkg/idempotency"
	"github.com/opencrm/crm/pkg/outbox"
	"github.com/opencrm/crm/services/contacts/internal/contacts"
)

// The objects of this context that carry custom fields.
var (
	contactObject = customfield.Object{Name: propertyapi.Contacts, Table: "contacts", Builtins: jsonNames(contactsapi.Contact{})}
	companyObject = customfield.Object{Name: propertyapi.Companies, Table: "companies", Builtins: jsonNames(contactsapi.Company{})}
)

// jsonNames are the JSON member names of a record type: the names a
// custom field may not take.
func jsonNames(v any) []string {
	t := reflect.TypeOf(v)
	var names []string
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if name != "" && name != "-" {
			names = append(names, name)
		}
	}
	return names
}

// mountProperties serves the definition routes of contacts and companies
// and their internal read (the gateway's typed document).
func mountProperties(mux *http.ServeMux, guards httpx.Guards, d *db.DB, internal func(http.Handler) http.Handler) {
	props := customfield.Store{DB: d, Stream: outbox.Stream(contactsapi.Service)}
	propertyhttp.Mount(mux, guards, contactsapi.ContactProperties, props, contactObject)
	propertyhttp.Mount(mux, guards, contactsapi.CompanyProperties, props, companyObject)
	propertyhttp.MountInternal(mux, internal, props, contactObject, companyObject)
}

// batchOps are one object's batch operations (contacts.Service's).
type batchOps[R, In any] struct {
	create func(ctx context.Context, key string, ins []In) (idempotency.Done[[]contacts.Result[R]], error)
	update func(ctx context.Context, key string, ups []contacts.Update[In]) (idempotency.Done[[]contacts.Result[R]], error)
	upsert func(ctx context.Context, key, idProperty string, ins []In) (idempotency.Done[[]contacts.Result[R]], error)
	read   func(ctx context.Context, in batchapi.Read) ([]contacts.Result[R], error)
	remove func(ctx context.Context, key string, ids []int64) (idempotency.Done[[]contacts.Result[R]], error)
}

// mountBatch serves rs with ops; U is the update input (In with its id),
// split by id.
func mountBatch[R, In, U any](mux *http.ServeMux, guards httpx.Guards, rs batchapi.Routes, ops batchOps[R, In], split func(U) contacts.Update[In]) {
	guards.Mount(mux, rs.Create, written(rs.Create, func(r *http.Request, key string, body batchapi.Batch[In]) (idempotency.Done[[]contacts.Result[R]], error) {
		return ops.create(r.Context(), key, body.Inputs)
	}))
	guards.Mount(mux, rs.Update, written(rs.Update, func(r *http.Request, key string, body batchapi.Batch[U]) (idempotency.Done[[]contacts.Result[R]], error) {
		ups := make([]contacts.Update[In], len(body.Inputs))
		for i, u := range body.Inputs {
			ups[i] = split(u)
		}
		return ops.update(r.Context(), key, ups)
	}))
	guards.Mount(mux, rs.Upsert, written(rs.Upsert, func(r *http.Request, key string, body batchapi.Upsert[In]) (idempotency.Done[[]contacts.Result[R]], error) {
		return ops.upsert(r.Context(), key, body.IDProperty, body.Inputs)
	}))
	guards.Mount(mux, rs.Delete, written(rs.Delete, func(r *http.Request, key string, body batchapi.Delete) (idempotency.Done[[]contacts.Result[R]], error) {
		return ops.remove(r.Context(), key, body.IDs)
	}))
	guards.Mount(mux, rs.Read, httpx.HandlerFunc(func(w http.ResponseWriter, r *http.Request) error {
		var body batchapi.Read
		if err := httpx.Decode(w, r, &body, rs.Read.Limit()); err != nil {
			return err
		}
		res, err := ops.read(r.Context(), body)
		if err != nil {
			return err
		}
		httpx.JSON(w, http.StatusOK, batchapi.Results[R]{Success: true, Data: res})
		return nil
	}))
}

// written is a batch write's handler: the body decoded, the write run
// under the request's Idempotency-Key, 200 with the results in input
// order and the route's message (a replay marked Idempotent-Replayed).
func written[B, R any](rt route.Route, fn func(r *http.Request, key string, body B) (idempotency.Done[[]contacts.Result[R]], error)) httpx.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		key, err := idempotency.Key(r)
		if err != nil {
			return err
		}
		var body B
		if err := httpx.Decode(w, r, &body, rt.Limit()); err != nil {
			return err
		}
		done, err := fn(r, key, body)
		if err != nil {
			return err
		}
		idempotency.MarkReplayed(w, done.Replayed)
		httpx.JSON(w, http.StatusOK, batchapi.Results[R]{Success: true, Data: done.Value, Message: rt.Message})
		return nil
	}
}

// readOne serves a record's GET: by id, or with id_property by the
// external id the path holds.
func readOne[T any](resource string, get func(context.Context, int64) (T, error),
	byExternal func(ctx context.Context, name, value string) (T, error)) httpx.HandlerFunc {
	byID := read(resource, get, httpx.OK)
	return func(w http.ResponseWriter, r *http.Request) error {
		name := r.URL.Query().Get(batchapi.IDProperty.Name)
		if name == "" {
			return byID(w, r)
		}
		v, err := byExternal(r.Context(), name, r.PathValue("id"))
		if err != nil {
			return err
		}
		httpx.OK(w, v)
		return nil
	}
}
