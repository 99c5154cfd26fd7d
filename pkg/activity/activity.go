// Package activity is the one implementation of notes and tasks that the
// contacts, leads and contracts contexts share: storage, validation and
// HTTP handlers mounted under the parent's path (/contacts/{id}/notes...).
// Each context keeps the tables in its own schema; only the code is shared.
package activity

import (
	"context"
	"io/fs"
	"net/http"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/opencrm/crm/pkg/activity/migrations"
	"github.com/opencrm/crm/pkg/auth"
	"github.com/opencrm/crm/pkg/contract/contactsapi"
	"github.com/opencrm/crm/pkg/contract/dealsapi"
	"github.com/opencrm/crm/pkg/db"
	"github.com/opencrm/crm/pkg/httpx"
	"github.com/opencrm/crm/pkg/patch"
	"github.com/opencrm/crm/pkg/problem"
	"github.com/opencrm/crm/pkg/timestamp"
	"github.com/opencrm/crm/pkg/validate"
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

// Note is a free-text note on a record; created_by is null for notes the
// system writes (e.g. a contract renewal).
type Note struct {
	ID        int64          `json:"id"`
	Content   string         `json:"content"`
	CreatedBy *int64         `json:"created_by"`
	CreatedAt timestamp.Time `json:"created_at"`
	UpdatedAt timestamp.Time `json:"updated_at"`
}

// Task is a to-do attached to a record.
type Task struct {
	ID          int64           `json:"id"`
	Title       string          `json:"title"`
	Description *string         `json:"description"`
	DueDate     *string         `json:"due_date"`
	DueTime     *string         `json:"due_time"`
	Priority    string          `json:"priority"`
	Status      string          `json:"status"`
	CompletedAt *timestamp.Time `json:"completed_at"`
	AssignedTo  *int64          `json:"assigned_to"`
	ContactID   *int64          `json:"contact_id"`
	CompanyID   *int64          `json:"company_id"`
	DealID      *int64          `json:"deal_id"`
	LeadID      *int64          `json:"lead_id"`
	ContractID  *int64          `json:"contract_id"`
	CreatedBy   *int64          `json:"created_by"`
	CreatedAt   timestamp.Time  `json:"created_at"`
	UpdatedAt   timestamp.Time  `json:"updated_at"`
}

// Config wires the handlers to one parent type.
type Config struct {
	DB *db.DB
	// ParentType is Contact, Lead or Contract.
	ParentType string
	// ParentName is used in 404 details ("contact").
	ParentName string
	// ParentExists returns a problem.NotFound error when the parent is absent.
	ParentExists func(ctx context.Context, id int64) error
	// UserExists validates assigned_to; nil skips the check.
	UserExists func(ctx context.Context, id int64) (bool, error)
	// References validates a task's contact_id, company_id and deal_id
	// (referenced ids must exist).
	References References
	// ParentWritable answers nil when the caller may change the parent
	// (a problem.Forbidden error otherwise): notes and tasks follow their
	// parent, except that the author of a note may always delete it. Nil
	// allows every caller.
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
type Handlers struct{ cfg Config }

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

// Register mounts the routes under base ("/contacts") on mux; wrap applies
// the service's authentication to each route.
func (h *Handlers) Register(mux *http.ServeMux, base string, wrap func(http.Handler) http.Handler) {
	base = strings.TrimSuffix(base, "/")
	route := func(pattern string, fn func(w http.ResponseWriter, r *http.Request, parentID int64) error) {
		mux.Handle(pattern, wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			pid, err := h.parent(r)
			if err == nil {
				err = fn(w, r, pid)
			}
			if err != nil {
				httpx.Error(w, r, err)
			}
		})))
	}
	route("GET "+base+"/{id}/notes", h.listNotes)
	route("POST "+base+"/{id}/notes", h.writing(h.createNote))
	route("DELETE "+base+"/{id}/notes/{noteId}", h.deleteNote)
	route("GET "+base+"/{id}/tasks", h.listTasks)
	route("POST "+base+"/{id}/tasks", h.writing(h.createTask))
	route("GET "+base+"/{id}/tasks/{taskId}", h.getTask)
	route("PUT "+base+"/{id}/tasks/{taskId}", h.writing(h.updateTask))
	route("DELETE "+base+"/{id}/tasks/{taskId}", h.writing(h.deleteTask))
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
		return 0, problem.NotFound(h.cfg.ParentName)
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

const noteColumns = `id, content, created_by, created_at, updated_at`

func scanNote(row pgx.CollectableRow) (Note, error) {
	var n Note
	err := row.Scan(&n.ID, &n.Content, &n.CreatedBy, &n.CreatedAt, &n.UpdatedAt)
	return n, err
}

func (h *Handlers) listNotes(w http.ResponseWriter, r *http.Request, pid int64) error {
	rows, err := h.cfg.DB.Query(r.Context(), `SELECT `+noteColumns+` FROM notes
		WHERE parent_type = $1 AND parent_id = $2 ORDER BY created_at DESC, id DESC`, h.cfg.ParentType, pid)
	if err != nil {
		return err
	}
	notes, err := pgx.CollectRows(rows, scanNote)
	if err != nil {
		return err
	}
	if notes == nil {
		notes = []Note{}
	}
	httpx.OK(w, notes)
	return nil
}

func (h *Handlers) createNote(w http.ResponseWriter, r *http.Request, pid int64) error {
	var in struct {
		Content *string `json:"content"`
	}
	if err := httpx.Decode(w, r, &in, 0); err != nil {
		return err
	}
	var v validate.Errors
	content := ""
	if in.Content != nil {
		content = strings.TrimSpace(*in.Content)
	}
	if v.Required("content", content) {
		v.MaxLen("content", content, validate.MaxContent)
	}
	if err := v.Err(); err != nil {
		return err
	}
	n, err := AddNote(r.Context(), h.cfg.DB, h.cfg.ParentType, pid, content, callerID(r))
	if err != nil {
		return err
	}
	httpx.Created(w, n, "Note added")
	return nil
}

// AddNote stores a note; created_by nil marks a system note. It takes a
// Querier so a context can add a note inside its own transaction.
func AddNote(ctx context.Context, q db.Querier, parentType string, parentID int64, content string, createdBy *int64) (Note, error) {
	rows, err := q.Query(ctx, `INSERT INTO notes (parent_type, parent_id, content, created_by)
		VALUES ($1, $2, $3, $4) RETURNING `+noteColumns, parentType, parentID, content, createdBy)
	if err != nil {
		return Note{}, err
	}
	return pgx.CollectExactlyOneRow(rows, scanNote)
}

func (h *Handlers) deleteNote(w http.ResponseWriter, r *http.Request, pid int64) error {
	nid, err := httpx.PathID(r, "noteId")
	if err != nil {
		return problem.NotFound("note")
	}
	var author *int64
	err = h.cfg.DB.QueryRow(r.Context(), `SELECT created_by FROM notes WHERE id = $1 AND parent_type = $2 AND parent_id = $3`,
		nid, h.cfg.ParentType, pid).Scan(&author)
	if db.IsNoRows(err) {
		return problem.NotFound("note")
	}
	if err != nil {
		return err
	}
	if me := callerID(r); me == nil || author == nil || *author != *me {
		if err := h.parentWritable(r.Context(), pid); err != nil {
			return err
		}
	}
	tag, err := h.cfg.DB.Exec(r.Context(), `DELETE FROM notes WHERE id = $1 AND parent_type = $2 AND parent_id = $3`,
		nid, h.cfg.ParentType, pid)
	if err != nil {
		return err
	}
	if tag.RowsAffected() == 0 {
		return problem.NotFound("note")
	}
	httpx.Deleted(w, "Note deleted")
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

const taskColumns = `id, title, description, to_char(due_date, 'YYYY-MM-DD'), due_time, priority, status,
	completed_at, assigned_to, contact_id, company_id, deal_id, lead_id, contract_id, created_by, created_at, updated_at`

func scanTask(row pgx.CollectableRow) (Task, error) {
	var t Task
	err := row.Scan(&t.ID, &t.Title, &t.Description, &t.DueDate, &t.DueTime, &t.Priority, &t.Status,
		&t.CompletedAt, &t.AssignedTo, &t.ContactID, &t.CompanyID, &t.DealID, &t.LeadID, &t.ContractID,
		&t.CreatedBy, &t.CreatedAt, &t.UpdatedAt)
	return t, err
}

func (h *Handlers) listTasks(w http.ResponseWriter, r *http.Request, pid int64) error {
	rows, err := h.cfg.DB.Query(r.Context(), `SELECT `+taskColumns+` FROM tasks
		WHERE parent_type = $1 AND parent_id = $2
		ORDER BY status = 'completed', due_date NULLS LAST, id`, h.cfg.ParentType, pid)
	if err != nil {
		return err
	}
	tasks, err := pgx.CollectRows(rows, scanTask)
	if err != nil {
		return err
	}
	if tasks == nil {
		tasks = []Task{}
	}
	httpx.OK(w, tasks)
	return nil
}

func (h *Handlers) getTask(w http.ResponseWriter, r *http.Request, pid int64) error {
	t, err := h.loadTask(r, pid)
	if err != nil {
		return err
	}
	httpx.OK(w, t)
	return nil
}

func (h *Handlers) loadTask(r *http.Request, pid int64) (Task, error) {
	tid, err := httpx.PathID(r, "taskId")
	if err != nil {
		return Task{}, problem.NotFound("task")
	}
	return getTask(r.Context(), h.cfg.DB, h.cfg.ParentType, pid, tid, "")
}

// getTask reads the task tid of the parent, with the row lock clause lock
// ("" for none); a task of another parent is not found.
func getTask(ctx context.Context, q db.Querier, parentType string, pid, tid int64, lock string) (Task, error) {
	rows, err := q.Query(ctx, `SELECT `+taskColumns+` FROM tasks
		WHERE id = $1 AND parent_type = $2 AND parent_id = $3`+lock, tid, parentType, pid)
	if err != nil {
		return Task{}, err
	}
	t, err := pgx.CollectExactlyOneRow(rows, scanTask)
	if db.IsNoRows(err) {
		return Task{}, problem.NotFound("task")
	}
	return t, err
}

// modifyTask locks the task, lets change patch it as committed and writes
// it back, in one transaction, so concurrent updates of one task apply one
// after the other and none undoes another. An error from change rolls back
// and is returned as is. The lock is FOR NO KEY UPDATE, the one the UPDATE
// takes anyway.
func modifyTask(ctx context.Context, d *db.DB, parentType string, pid, tid int64, change func(*Task) error) (Task, error) {
	var updated Task
	err := d.InTx(ctx, func(tx pgx.Tx) error {
		t, err := getTask(ctx, tx, parentType, pid, tid, " FOR NO KEY UPDATE")
		if err != nil {
			return err
		}
		if err := change(&t); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `UPDATE tasks SET title = $2, description = $3, due_date = $4::date,
			due_time = $5, priority = $6, status = $7, completed_at = $8, assigned_to = $9, contact_id = $10,
			company_id = $11, deal_id = $12, updated_at = now()
			WHERE id = $1 RETURNING `+taskColumns,
			t.ID, t.Title, t.Description, t.DueDate, t.DueTime, t.Priority, t.Status, t.CompletedAt,
			t.AssignedTo, t.ContactID, t.CompanyID, t.DealID)
		if err != nil {
			return err
		}
		updated, err = pgx.CollectExactlyOneRow(rows, scanTask)
		return err
	})
	return updated, err
}

// taskInput is a task body; every optional field distinguishes absent
// (keep) from null (clear) on update.
type taskInput struct {
	Title       patch.Field[string] `json:"title"`
	Description patch.Field[string] `json:"description"`
	DueDate     patch.Field[string] `json:"due_date"`
	DueTime     patch.Field[string] `json:"due_time"`
	Priority    patch.Field[string] `json:"priority"`
	Status      patch.Field[string] `json:"status"`
	AssignedTo  patch.Field[int64]  `json:"assigned_to"`
	ContactID   patch.Field[int64]  `json:"contact_id"`
	CompanyID   patch.Field[int64]  `json:"company_id"`
	DealID      patch.Field[int64]  `json:"deal_id"`
}

// apply validates in, assignee and references included, and writes it
// over t. Only ids the body sets are looked up.
func (h *Handlers) apply(ctx context.Context, in taskInput, t *Task) error {
	v := applyTask(in, t)
	refs := h.cfg.References
	for _, c := range []struct {
		field   string
		in      patch.Field[int64]
		id      *int64
		exists  func(context.Context, int64) (bool, error)
		missing string
	}{
		{"assigned_to", in.AssignedTo, t.AssignedTo, h.cfg.UserExists, "is not a known user"},
		{"contact_id", in.ContactID, t.ContactID, refs.Contact, "does not exist"},
		{"company_id", in.CompanyID, t.CompanyID, refs.Company, "does not exist"},
		{"deal_id", in.DealID, t.DealID, refs.Deal, "does not exist"},
	} {
		if !c.in.Set || c.id == nil || c.exists == nil || v.Has(c.field) {
			continue
		}
		ok, err := c.exists(ctx, *c.id)
		if err != nil {
			return err
		}
		if !ok {
			v.Add(c.field, "%s", c.missing)
		}
	}
	return v.Err()
}

// applyTask validates in, all but the assignee's existence, and writes it
// over t. Which errors it finds depends on in alone, never on t.
func applyTask(in taskInput, t *Task) *validate.Errors {
	v := &validate.Errors{}
	title := strings.TrimSpace(in.Title.Value)
	if v.Required("title", title) {
		v.MaxLen("title", title, validate.MaxString)
	}
	t.Title = title
	if in.Description.Set {
		t.Description = emptyToNil(in.Description.Ptr())
		if t.Description != nil {
			v.MaxLen("description", *t.Description, validate.MaxContent)
		}
	}
	if in.DueDate.Set {
		t.DueDate = emptyToNil(in.DueDate.Ptr())
		if t.DueDate != nil && v.Date("due_date", *t.DueDate) == nil {
			t.DueDate = nil
		}
	}
	if in.DueTime.Set {
		t.DueTime = emptyToNil(in.DueTime.Ptr())
		if t.DueTime != nil && !validTime(*t.DueTime) {
			v.Add("due_time", "must be a time in the form HH:MM or HH:MM:SS")
		}
	}
	if in.Priority.Set {
		p := in.Priority.Value
		if p == "" {
			p = "medium"
		}
		if v.OneOf("priority", p, "low", "medium", "high") {
			t.Priority = p
		}
	}
	if in.Status.Set {
		s := in.Status.Value
		if s == "" {
			s = "open"
		}
		if v.OneOf("status", s, "open", "completed") {
			if s == "completed" && t.Status != "completed" {
				now := timestamp.Now()
				t.CompletedAt = &now
			}
			if s == "open" {
				t.CompletedAt = nil
			}
			t.Status = s
		}
	}
	for _, f := range []struct {
		name string
		in   patch.Field[int64]
		dst  **int64
	}{
		{"assigned_to", in.AssignedTo, &t.AssignedTo},
		{"contact_id", in.ContactID, &t.ContactID},
		{"company_id", in.CompanyID, &t.CompanyID},
		{"deal_id", in.DealID, &t.DealID},
	} {
		if f.in.Set && !f.in.Null && f.in.Value <= 0 {
			v.Add(f.name, "must be a positive integer")
			continue
		}
		f.in.Apply(f.dst)
	}
	return v
}

func validTime(s string) bool {
	for _, layout := range []string{"15:04", "15:04:05"} {
		if _, err := time.Parse(layout, s); err == nil {
			return true
		}
	}
	return false
}

func emptyToNil(s *string) *string {
	if s == nil || strings.TrimSpace(*s) == "" {
		return nil
	}
	v := strings.TrimSpace(*s)
	return &v
}

// link sets the column naming the parent (contact_id for a contact's task).
func (h *Handlers) link(t *Task, pid int64) {
	switch h.cfg.ParentType {
	case Contact:
		t.ContactID = &pid
	case Lead:
		t.LeadID = &pid
	case Contract:
		t.ContractID = &pid
	}
}

func (h *Handlers) createTask(w http.ResponseWriter, r *http.Request, pid int64) error {
	var in taskInput
	if err := httpx.Decode(w, r, &in, 0); err != nil {
		return err
	}
	t := Task{Priority: "medium", Status: "open", CreatedBy: callerID(r)}
	if err := h.apply(r.Context(), in, &t); err != nil {
		return err
	}
	h.link(&t, pid)
	rows, err := h.cfg.DB.Query(r.Context(), `INSERT INTO tasks (parent_type, parent_id, title, description,
		due_date, due_time, priority, status, completed_at, assigned_to, contact_id, company_id, deal_id,
		lead_id, contract_id, created_by)
		VALUES ($1, $2, $3, $4, $5::date, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16) RETURNING `+taskColumns,
		h.cfg.ParentType, pid, t.Title, t.Description, t.DueDate, t.DueTime, t.Priority, t.Status, t.CompletedAt,
		t.AssignedTo, t.ContactID, t.CompanyID, t.DealID, t.LeadID, t.ContractID, t.CreatedBy)
	if err != nil {
		return err
	}
	created, err := pgx.CollectExactlyOneRow(rows, scanTask)
	if err != nil {
		return err
	}
	httpx.Created(w, created, "Task created")
	return nil
}

// updateTask validates the body against the task as first read, assignee
// lookup included, before any lock is taken; then applies it to the task
// as read under its row lock, so fields the body leaves out keep what a
// concurrent update committed (a completion is not undone by a rename).
func (h *Handlers) updateTask(w http.ResponseWriter, r *http.Request, pid int64) error {
	t, err := h.loadTask(r, pid)
	if err != nil {
		return err
	}
	var in taskInput
	if err := httpx.Decode(w, r, &in, 0); err != nil {
		return err
	}
	if err := h.apply(r.Context(), in, &t); err != nil {
		return err
	}
	updated, err := modifyTask(r.Context(), h.cfg.DB, h.cfg.ParentType, pid, t.ID, func(cur *Task) error {
		if err := applyTask(in, cur).Err(); err != nil {
			return err
		}
		h.link(cur, pid)
		return nil
	})
	if err != nil {
		return err
	}
	httpx.Updated(w, updated, "Task updated")
	return nil
}

func (h *Handlers) deleteTask(w http.ResponseWriter, r *http.Request, pid int64) error {
	t, err := h.loadTask(r, pid)
	if err != nil {
		return err
	}
	if _, err := h.cfg.DB.Exec(r.Context(), `DELETE FROM tasks WHERE id = $1`, t.ID); err != nil {
		return err
	}
	httpx.Deleted(w, "Task deleted")
	return nil
}
