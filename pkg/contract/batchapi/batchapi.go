// Package batchapi is the public contract of batch writes and reads
// (POST /{object}/batch/...): the bodies, the answer, and the routes each
// owning context declares for its records. A batch is at most MaxInputs
// inputs, validated whole before anything is written, written in one
// transaction, and answered in input order.
package batchapi

import (
	"net/http"

	"github.com/opencrm/crm/pkg/contract/route"
)

// MaxInputs bounds every batch.
const MaxInputs = 100

// Result statuses.
const (
	Created   = "created"
	Updated   = "updated"
	Unchanged = "unchanged"
	Deleted   = "deleted"
	NotFound  = "not_found"
)

// Batch is the body of batch/create (T the record's input) and
// batch/update (T the input with its id).
type Batch[T any] struct {
	Inputs []T `json:"inputs" minItems:"1" maxItems:"100"`
}

// Upsert is the body of batch/upsert: each input is matched to a record
// by its value of IDProperty (a unique custom field, or the record's own
// external id such as a contact's email), updated when one exists and
// created otherwise.
type Upsert[T any] struct {
	IDProperty string `json:"id_property" minLength:"1" example:"email" description:"The field that identifies a record: the object's own external id (email for contacts) or a unique custom field."`
	Inputs     []T    `json:"inputs" minItems:"1" maxItems:"100"`
}

// Read is the body of batch/read: ids, or values of an id property.
type Read struct {
	IDs        []int64  `json:"ids,omitempty" maxItems:"100" description:"Record ids; or give id_property and values instead."`
	IDProperty string   `json:"id_property,omitempty" example:"erp_id"`
	Values     []string `json:"values,omitempty" maxItems:"100"`
}

// Delete is the body of batch/delete.
type Delete struct {
	IDs []int64 `json:"ids" minItems:"1" maxItems:"100"`
}

// Result is one input's outcome; record is null for deleted and not_found.
type Result[T any] struct {
	Status string `json:"status" enum:"created,updated,unchanged,deleted,not_found"`
	Record *T     `json:"record"`
}

// Results is a batch's answer, in input order.
type Results[T any] struct {
	Success bool        `json:"success" const:"true"`
	Data    []Result[T] `json:"data" nullable:"false"`
	Message string      `json:"message,omitempty" example:"contacts created" description:"What the write did, in words; absent on batch/read."`
}

// Routes are the batch routes of one object and its read by external id.
type Routes struct {
	Create, Update, Upsert, Read, Delete route.Route
	// ByExternalID is GET /{object}/{value}?id_property=<name>; the
	// service serves it on the record's GET /{object}/{id} route, so it is
	// not mounted by itself (see Param).
}

// IDProperty is the query parameter of a read by external id.
var IDProperty = route.Param{Name: "id_property", Type: "string", MaxLength: 63,
	Desc: "Read the record whose value of this unique field (or the object's own external id) is the path's value, instead of by id."}

// NewRoutes declares the batch routes under base ("/contacts") of a
// record R with create input C and update input U (C with an id).
func NewRoutes[R, C, U any](service, resource, tag, base, plural string) Routes {
	r := func(op, summary string) route.Route {
		return route.Route{Method: http.MethodPost, Path: base + "/batch/" + op, Service: service, Auth: route.JWT,
			Resource: resource, Tag: tag, Summary: summary, Response: Results[R]{}, Problems: []int{http.StatusConflict}}
	}
	rs := Routes{
		Create: r("create", "Create up to 100 "+plural+" at once"),
		Update: r("update", "Update up to 100 "+plural+" by id at once"),
		Upsert: r("upsert", "Create or update up to 100 "+plural+" by an external id"),
		Read:   r("read", "Read up to 100 "+plural+" by id or external id"),
		Delete: r("delete", "Delete up to 100 "+plural+" at once"),
	}
	rs.Create.Request, rs.Create.Message = Batch[C]{}, plural+" created"
	rs.Update.Request, rs.Update.Message = Batch[U]{}, plural+" updated"
	rs.Upsert.Request, rs.Upsert.Message = Upsert[C]{}, plural+" upserted"
	rs.Read.Request, rs.Read.ReadOnly = Read{}, true
	rs.Delete.Request, rs.Delete.Message = Delete{}, plural+" deleted"
	rs.Read.Problems, rs.Delete.Problems = nil, nil
	return rs
}

// All lists the routes in the document's order.
func (rs Routes) All() []route.Route {
	return []route.Route{rs.Create, rs.Update, rs.Upsert, rs.Read, rs.Delete}
}
