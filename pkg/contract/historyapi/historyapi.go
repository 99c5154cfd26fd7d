// Package historyapi is the contract of record history: the entries a
// record's history route answers and the route each context declares for
// its records (NewRoute). The contexts record history with pkg/history.
package historyapi

import (
	"encoding/json"
	"net/http"

	"github.com/opencrm/crm/pkg/contract/route"
	"github.com/opencrm/crm/pkg/timestamp"
)

// Actor kinds: who made a change.
const (
	ActorUser   = "user"
	ActorToken  = "token"
	ActorAPIKey = "api_key"
	ActorSystem = "system"
)

// Channels: how a change was made (an entry's via).
const (
	ViaAPI           = "api"
	ViaBatch         = "batch"
	ViaImport        = "import"
	ViaQualification = "qualification"
	ViaMerge         = "merge"
	ViaIntake        = "intake"
	ViaSync          = "sync"
	ViaExpiry        = "expiry"
	ViaErasure       = "erasure"
	ViaSystem        = "system"
)

// Actions of an entry.
const (
	Created = "created"
	Updated = "updated"
	Deleted = "deleted"
)

// MaxPerPage bounds per_page.
const MaxPerPage = 100

// The wire types carry the History prefix because the OpenAPI document
// names its schemas after them.

// HistoryActor is who made a change: a person (user), an integration token
// (token, the id of its service user), the public intake's API key
// (api_key, the key's id) or the system (a scheduled job, a migration).
type HistoryActor struct {
	Type string `json:"type" enum:"user,token,api_key,system" example:"user"`
	ID   *int64 `json:"id,omitempty" example:"7"`
	Name string `json:"name,omitempty" example:"Ann Lee"`
}

// HistoryChange is one field's value before and after; null where it had none.
// Custom fields are named custom_fields.<name>.
type HistoryChange struct {
	Field string          `json:"field" example:"status"`
	From  json.RawMessage `json:"from" nullable:"true" description:"The value before, as the record stored it; null for none (every field of a create)." example:"\"active\""`
	To    json.RawMessage `json:"to" nullable:"true" description:"The value after; null for none (every field of a delete)." example:"\"inactive\""`
}

// HistoryEntry is one change of one record.
type HistoryEntry struct {
	ID int64 `json:"id" example:"1042"`
	// Object and RecordID name the record changed: the record itself, or
	// one that belongs to it (a note or task of a contact, a quote of a
	// deal), whose changes its history lists too.
	Object    string          `json:"object" enum:"contact,company,lead,deal,quote,contract,template,note,task" example:"contact"`
	RecordID  int64           `json:"record_id" example:"42"`
	At        timestamp.Time  `json:"at"`
	Action    string          `json:"action" enum:"created,updated,deleted" example:"updated"`
	Actor     HistoryActor    `json:"actor"`
	Via       string          `json:"via" enum:"api,batch,import,qualification,merge,intake,sync,expiry,erasure,system" example:"api"`
	RequestID string          `json:"request_id" description:"The X-Request-Id of the request that made the change; empty for the system's." example:"9b2f6c1e-3d4a-4b8e-a0c2-5f7e8d9a1b2c"`
	Changes   []HistoryChange `json:"changes" nullable:"false"`
}

// HistoryPage is a page of a record's history, newest first.
type HistoryPage struct {
	Success    bool           `json:"success" const:"true"`
	Data       []HistoryEntry `json:"data" nullable:"false"`
	HasMore    bool           `json:"has_more" description:"Older entries follow next_before."`
	NextBefore *int64         `json:"next_before" description:"The id to pass as ?before= for the next (older) page: the last entry of this page; null when the page is empty." example:"1017"`
}

// Query is the history route's parameters.
var Query = []route.Param{
	{Name: "before", Type: "integer", Desc: "Cursor: entries older than this entry id (the next_before of the previous page).", Min: new(1)},
	{Name: "per_page", Type: "integer", Desc: "Entries per page, default 25, at most 100.", Min: new(1), Max: new(MaxPerPage), Default: 25},
}

// NewRoute declares GET <base>/{id}/history for a context's records,
// readable by whoever may read the record.
func NewRoute(service, resource, tag, base, object string) route.Route {
	return route.Route{Method: http.MethodGet, Path: base + "/{id}/history", Service: service, Auth: route.JWT, Resource: resource,
		Tag: tag, Summary: "The " + object + "'s change history, newest first", Query: Query, Response: HistoryPage{}}
}

// Owners are the services holding each object's history, for the admin
// route's dispatch (the contexts' Service names; this package cannot
// import their contract packages, which import it).
var Owners = map[string]string{
	"contact": "contacts", "company": "contacts", "lead": "leads",
	"deal": "deals", "quote": "deals", "contract": "contracts", "template": "contracts",
}

// AdminQuery is the admin history route's parameters.
var AdminQuery = append([]route.Param{
	{Name: "object", Type: "string", Desc: "The record's type.", Required: true,
		Enum: []string{"contact", "company", "lead", "deal", "quote", "contract", "template"}},
	{Name: "id", Type: "integer", Desc: "The record's id.", Required: true, Min: new(1)},
}, Query...)

// Admin is GET /history?object=&id=: any record's history, deleted
// records' too, for admins (scope admin). The gateway sends it to the
// context that owns object; each such context serves it for its objects.
var Admin = route.Route{Method: http.MethodGet, Path: "/history", Auth: route.Admin,
	Tag: "History", Summary: "Any record's change history, deleted records' too (admin)",
	Query: AdminQuery, Response: HistoryPage{}, By: &route.Dispatch{Param: "object", Services: Owners}}

// Routes are the history routes no single context declares.
var Routes = []route.Route{Admin}
