package contactsapi

import "time"

// Note is a free-text note on a contact, lead or contract (the same shape
// under each parent).
type Note struct {
	ID        int64     `json:"id" minimum:"1" example:"5"`
	Content   string    `json:"content" maxLength:"100000" example:"Met at the conference."`
	CreatedBy *int64    `json:"created_by" minimum:"1"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// NoteInput is the body of POST …/{id}/notes.
type NoteInput struct {
	Content string `json:"content" minLength:"1" maxLength:"100000" example:"Met at the conference."`
}

// Task is a to-do on a contact, lead or contract.
type Task struct {
	ID          int64      `json:"id" minimum:"1" example:"9"`
	Title       string     `json:"title" maxLength:"255" example:"Send the proposal"`
	Description *string    `json:"description" maxLength:"100000"`
	DueDate     *string    `json:"due_date" format:"date" example:"2026-12-01"`
	DueTime     *string    `json:"due_time" example:"14:30"`
	Priority    string     `json:"priority" enum:"low,medium,high" example:"medium"`
	Status      string     `json:"status" enum:"open,completed" example:"open"`
	CompletedAt *time.Time `json:"completed_at"`
	AssignedTo  *int64     `json:"assigned_to" minimum:"1"`
	ContactID   *int64     `json:"contact_id" minimum:"1"`
	CompanyID   *int64     `json:"company_id" minimum:"1"`
	DealID      *int64     `json:"deal_id" minimum:"1"`
	LeadID      *int64     `json:"lead_id" minimum:"1"`
	ContractID  *int64     `json:"contract_id" minimum:"1"`
	CreatedBy   *int64     `json:"created_by" minimum:"1"`
	CreatedAt   time.Time  `json:"created_at"`
	UpdatedAt   time.Time  `json:"updated_at"`
}

// TaskInput is the body of POST …/{id}/tasks (title required) and PUT
// …/tasks/{taskId}. Referenced ids must exist.
type TaskInput struct {
	Title       string  `json:"title" minLength:"1" maxLength:"255" example:"Send the proposal"`
	Description *string `json:"description,omitempty" nullable:"true" maxLength:"100000"`
	DueDate     *string `json:"due_date,omitempty" nullable:"true" format:"date" example:"2026-12-01"`
	DueTime     *string `json:"due_time,omitempty" nullable:"true" example:"14:30"`
	Priority    *string `json:"priority,omitempty" enum:"low,medium,high"`
	Status      *string `json:"status,omitempty" enum:"open,completed"`
	AssignedTo  *int64  `json:"assigned_to,omitempty" nullable:"true" minimum:"1"`
	ContactID   *int64  `json:"contact_id,omitempty" nullable:"true" minimum:"1"`
	CompanyID   *int64  `json:"company_id,omitempty" nullable:"true" minimum:"1"`
	DealID      *int64  `json:"deal_id,omitempty" nullable:"true" minimum:"1"`
}
