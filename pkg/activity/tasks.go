package activity

import (
	"context"
	"net/http"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/opencrm/crm/pkg/contract/contactsapi"
	"github.com/opencrm/crm/pkg/db"
	"github.com/opencrm/crm/pkg/fault"
	"github.com/opencrm/crm/pkg/httpx"
	"github.com/opencrm/crm/pkg/patch"
	"github.com/opencrm/crm/pkg/timestamp"
	"github.com/opencrm/crm/pkg/validate"
)

// Task is a to-do attached to a record.
type Task = contactsapi.Task

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
		return Task{}, fault.NotFound("task")
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
		return Task{}, fault.NotFound("task")
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

// apply validates in, assignee and references included, and writes it
// over t. Only ids the body sets are looked up.
func (h *Handlers) apply(ctx context.Context, in contactsapi.TaskInput, t *Task) error {
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
func applyTask(in contactsapi.TaskInput, t *Task) *validate.Errors {
	v := &validate.Errors{}
	title := strings.TrimSpace(in.Title)
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
	var in contactsapi.TaskInput
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
	w.Header().Set("Location", h.routes.GetTask.Location(pid, created.ID))
	httpx.Created(w, created, h.routes.AddTask.Message)
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
	var in contactsapi.TaskInput
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
	httpx.Updated(w, updated, h.routes.UpdateTask.Message)
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
	httpx.Deleted(w, h.routes.DeleteTask.Message)
	return nil
}
