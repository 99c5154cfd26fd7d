package contactsapi

import (
	"github.com/opencrm/crm/pkg/patch"
	"github.com/opencrm/crm/pkg/timestamp"
)

// Note is a free-text note on a contact, lead or contract (the same shape
// under each parent).
type Note struct {
	ID        int64          `json:"id" minimum:"1" example:"5"`
	Content   string         `json:"content" maxLength:"100000" example:"Met at the conference."`
	CreatedBy *int64         `json:"created_by" minimum:"1"`
	CreatedAt timestamp.Time `json:"created_at"`
	UpdatedAt timestamp.Time `json:"updated_at"`
}

// NoteInput is the body of POST …/{id}/notes.
type NoteInput struct {
	Content string `json:"content" minLength:"1" maxLength:"100000" example:"Met at the conference."`
}

// Task is a to-do on a contact, lead or contract.
type Task struct {
	ID          int64           `json:"id" minimum:"1" example:"9"`
	Title       string          `json:"title" maxLength:"255" example:"Send the proposal"`
	Description *string         `json:"description" maxLength:"100000"`
	DueDate     *string         `json:"due_date" format:"date" example:"2026-12-01"`
	DueTime     *string         `json:"due_time" example:"14:30"`
	Priority    string          `json:"priority" enum:"low,medium,high" example:"medium"`
	Status      string          `json:"status" enum:"open,completed" example:"open"`
	CompletedAt *timestamp.Time `json:"completed_at"`
	AssignedTo  *int64          `json:"assigned_to" minimum:"1"`
	ContactID   *int64          `json:"contact_id" minimum:"1"`
	CompanyID   *int64          `json:"company_id" minimum:"1"`
	DealID      *int64          `json:"deal_id" minimum:"1"`
	LeadID      *int64          `json:"lead_id" minimum:"1"`
	ContractID  *int64          `json:"contract_id" minimum:"1"`
	CreatedBy   *int64          `json:"created_by" minimum:"1"`
	CreatedAt   timestamp.Time  `json:"created_at"`
	UpdatedAt   timestamp.Time  `json:"updated_at"`
}

// TaskInput is the body of POST …/{id}/tasks (title required) and PUT
// …/tasks/{taskId} (title required too). Referenced ids must exist. An
// absent optional field is left unchanged on update; null or "" clears it
// (priority and status return to medium and open).
type TaskInput struct {
	Title       string              `json:"title" minLength:"1" maxLength:"255" example:"Send the proposal"`
	Description patch.Field[string] `json:"description,omitzero" nullable:"true" maxLength:"100000"`
	DueDate     patch.Field[string] `json:"due_date,omitzero" nullable:"true" format:"date" example:"2026-12-01"`
	DueTime     patch.Field[string] `json:"due_time,omitzero" nullable:"true" example:"14:30"`
	Priority    patch.Field[string] `json:"priority,omitzero" enum:"low,medium,high"`
	Status      patch.Field[string] `json:"status,omitzero" enum:"open,completed"`
	AssignedTo  patch.Field[int64]  `json:"assigned_to,omitzero" nullable:"true" minimum:"1"`
	ContactID   patch.Field[int64]  `json:"contact_id,omitzero" nullable:"true" minimum:"1"`
	CompanyID   patch.Field[int64]  `json:"company_id,omitzero" nullable:"true" minimum:"1"`
	DealID      patch.Field[int64]  `json:"deal_id,omitzero" nullable:"true" minimum:"1"`
}
