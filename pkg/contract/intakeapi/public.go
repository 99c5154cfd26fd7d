package intakeapi

import "github.com/opencrm/crm/pkg/timestamp"

// LeadSubmission is the body of SubmitLead, sent by a web form or
// another system with an API key. website is a honeypot: leave it empty.
type LeadSubmission struct {
	FirstName string `json:"first_name" minLength:"1" maxLength:"100" example:"Wendy"`
	LastName  string `json:"last_name" minLength:"1" maxLength:"100" example:"Web"`
	Email     string `json:"email" minLength:"1" maxLength:"255" format:"email" example:"wendy@example.com"`
	Phone     string `json:"phone,omitempty" maxLength:"255"`
	Company   string `json:"company,omitempty" maxLength:"255"`
	JobTitle  string `json:"job_title,omitempty" maxLength:"255"`
	Source    string `json:"source,omitempty" maxLength:"255" example:"website"`
	Notes     string `json:"notes,omitempty" maxLength:"100000"`
	Website   string `json:"website,omitempty" maxLength:"255" description:"Honeypot; a filled value is accepted and dropped."`
}

// SubmissionRef is the data of a SubmitLead answer: id is the lead
// (null while it waits, 202), submission_id the stored submission.
type SubmissionRef struct {
	ID           *int64 `json:"id" minimum:"1" example:"88"`
	SubmissionID int64  `json:"submission_id,omitempty" minimum:"1" example:"301"`
	// DuplicateOf is present when the address already belongs to a
	// contact or another lead; the lead is accepted all the same.
	DuplicateOf *SubmissionDuplicate `json:"duplicate_of,omitempty" description:"Present when the submitted email (compared ignoring case) already belongs to a contact or to another lead: that record's id. The lead is accepted all the same. Only where the installation reports duplicates (INTAKE_REPORT_DUPLICATES, off by default: an intake key is public); best effort: absent when the check could not be made."`
}

// SubmissionDuplicate names the existing record a submission repeats: the
// oldest contact with its email, else the oldest other lead with it.
// Exactly one is set.
type SubmissionDuplicate struct {
	ContactID int64 `json:"contact_id,omitempty" minimum:"1" example:"412"`
	LeadID    int64 `json:"lead_id,omitempty" minimum:"1" example:"87"`
}

// SubmissionAnswer answers SubmitLead (201 created, 202 queued).
type SubmissionAnswer struct {
	Success bool          `json:"success" const:"true"`
	Data    SubmissionRef `json:"data"`
	Message string        `json:"message" example:"Lead created successfully"`
}

// Submission is one stored public lead submission and its delivery state.
// Intake encodes its log entries as this type itself, so the timestamps are
// timestamp.Time (the platform's six fractional digits).
type Submission struct {
	ID            int64           `json:"id" minimum:"1" example:"301"`
	APIKeyID      int64           `json:"api_key_id" minimum:"1"`
	Status        string          `json:"status" enum:"pending,delivered,failed,spam" example:"delivered"`
	FirstName     string          `json:"first_name"`
	LastName      string          `json:"last_name"`
	Email         string          `json:"email"`
	Phone         string          `json:"phone"`
	Company       string          `json:"company"`
	JobTitle      string          `json:"job_title"`
	Source        string          `json:"source"`
	Notes         string          `json:"notes"`
	Origin        string          `json:"origin"`
	LeadID        *int64          `json:"lead_id" minimum:"1"`
	Attempts      int             `json:"attempts" minimum:"0"`
	NextAttemptAt *timestamp.Time `json:"next_attempt_at"`
	LastError     string          `json:"last_error"`
	CreatedAt     timestamp.Time  `json:"created_at"`
	UpdatedAt     timestamp.Time  `json:"updated_at"`
	DeliveredAt   *timestamp.Time `json:"delivered_at"`
}
