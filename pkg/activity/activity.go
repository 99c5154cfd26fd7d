// Package activity is the one implementation of notes and tasks that the
// contacts, leads and contracts contexts share: storage, validation and
// HTTP handlers mounted under the parent's path (/contacts/{id}/notes...).
// Each context keeps the tables in its own schema; only the code is shared.
package activity

import (
	"context"
	"io/fs"
	"net/http"

	"github.com/opencrm/crm/pkg/activity/migrations"
	"github.com/opencrm/crm/pkg/auth"
	"github.com/opencrm/crm/pkg/contract/contactsapi"
	"github.com/opencrm/crm/pkg/contract/dealsapi"
	"github.com/opencrm/crm/pkg/contract/route"
	"github.com/opencrm/crm/pkg/db"
	"github.com/opencrm/crm/pkg/fault"
	"github.com/opencrm/crm/pkg/httpx"
)

// Parent types.
const (
	Contact  = "contact"
	Lead     = "lead"
	Contract = "contract"
)

// Migrations is the notes and tasks migration set.
var Migrations fs.FS = migrations.FS

// Migrate creates the notes and tasks tables in d's schema.
func Migrate(ctx context.Context, d *db.DB) error {
	return db.Migrate(ctx, d, "activity", Migrations)
}

// Config wires the handlers to one parent type.
type Config struct {
	DB *db.DB
	// ParentType is Contact, Lead or Contract.
	ParentType string
	// ParentName is used in 404 details ("contact").
	ParentName string
	// ParentExists returns a not-found error (fault.NotFound) when the parent
	// is absent.
	ParentExists func(ctx context.Context, id int64) error
	// UserExists validates assigned_to; nil skips the check.
	UserExists func(ctx context.Context, id int64) (bool, error)
	// References validates a task's contact_id, company_id and deal_id
	// (referenced ids must exist).
	References References
	// ParentWritable answers nil when the caller may change the parent (a
	// forbidden error, fault.Forbidden, otherwise): notes and tasks follow
	// their parent, except that the author of a note may always delete it.
	// Nil allows every caller.
	ParentWritable func(ctx context.Context, id int64) error
}

// References answer whether a record a task points at exists; they live in
// other contexts, so each service wires them to its own store or to the
// owner's internal API. A nil check skips that kind.
type References struct {
	Contact, Company, Deal func(ctx context.Context, id int64) (bool, error)
}

// RemoteReferences checks contacts and companies with the contacts
// context's typed client and deals with the deals context's.
func RemoteReferences(contacts *contactsapi.Client, deals *dealsapi.Client) References {
	return References{Contact: contacts.ContactExists, Company: contacts.CompanyExists, Deal: deals.DealExists}
}

// Handlers serves notes and tasks of one parent type.
type Handlers struct {
	cfg Config
	// routes are the declarations mounted (Mount); the handlers answer
	// with their messages and build Locations from them.
	routes contactsapi.Activity
}

// New checks the configuration.
func New(cfg Config) (*Handlers, error) {
	if cfg.DB == nil || cfg.ParentExists == nil {
		return nil, errorString("activity: DB and ParentExists are required")
	}
	switch cfg.ParentType {
	case Contact, Lead, Contract:
	default:
		return nil, errorString("activity: unknown parent type " + cfg.ParentType)
	}
	if cfg.ParentName == "" {
		cfg.ParentName = cfg.ParentType
	}
	return &Handlers{cfg: cfg}, nil
}

type errorString string

func (e errorString) Error() string { return string(e) }

// Mount serves the parent's declared notes and tasks routes
// (contactsapi.ContactActivity, leadsapi.LeadActivity,
// contractsapi.ContractActivity) on mux, each behind its policy's guard.
// Call it once per Handlers.
func (h *Handlers) Mount(mux *http.ServeMux, routes contactsapi.Activity, guards httpx.Guards) {
	h.routes = routes
	handle := func(rt route.Route, fn func(w http.ResponseWriter, r *http.Request, parentID int64) error) {
		guards.Mount(mux, rt, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			pid, err := h.parent(r)
			if err == nil {
				err = fn(w, r, pid)
			}
			if err != nil {
				httpx.Error(w, r, err)
			}
		}))
	}
	handle(routes.ListNotes, h.listNotes)
	handle(routes.AddNote, h.writing(h.createNote))
	handle(routes.DeleteNote, h.deleteNote)
	handle(routes.ListTasks, h.listTasks)
	handle(routes.AddTask, h.writing(h.createTask))
	handle(routes.GetTask, h.getTask)
	handle(routes.UpdateTask, h.writing(h.updateTask))
	handle(routes.DeleteTask, h.writing(h.deleteTask))
}

// writing runs fn only when the caller may change the parent.
func (h *Handlers) writing(fn func(w http.ResponseWriter, r *http.Request, pid int64) error) func(w http.ResponseWriter, r *http.Request, pid int64) error {
	return func(w http.ResponseWriter, r *http.Request, pid int64) error {
		if err := h.parentWritable(r.Context(), pid); err != nil {
			return err
		}
		return fn(w, r, pid)
	}
}
func (h *Handlers) parentWritable(ctx context.Context, pid int64) error {
	if h.cfg.ParentWritable == nil {
		return nil
	}
	return h.cfg.ParentWritable(ctx, pid)
}

// parent resolves and checks the {id} of the path.
func (h *Handlers) parent(r *http.Request) (int64, error) {
	id, err := httpx.PathID(r, "id")
	if err != nil {
		return 0, fault.NotFound(h.cfg.ParentName)
	}
	if err := h.cfg.ParentExists(r.Context(), id); err != nil {
		return 0, err
	}
	return id, nil
}
func callerID(r *http.Request) *int64 {
	if c := auth.FromContext(r.Context()); c != nil {
		id := c.UserID()
		return &id
	}
	return nil
}

// DeleteAll removes every note and task of a parent, inside the parent's
// delete transaction.
func DeleteAll(ctx context.Context, q db.Querier, parentType string, parentID int64) error {
	if _, err := q.Exec(ctx, `DELETE FROM notes WHERE parent_type = $1 AND parent_id = $2`, parentType, parentID); err != nil {
		return err
	}
	_, err := q.Exec(ctx, `DELETE FROM tasks WHERE parent_type = $1 AND parent_id = $2`, parentType, parentID)
	return err
}
