// Package envelope holds the JSON envelopes every public route of the API
// answers with (see docs/api.md): one record, a list, a page of a list, a
// deletion. They are generic over the record so the OpenAPI document
// names one schema per record and envelope (ContactPage, DealRecord...).
package envelope

// Record is the answer carrying one record.
type Record[T any] struct {
	Success bool   `json:"success" const:"true"`
	Data    T      `json:"data"`
	Message string `json:"message,omitempty" example:"Contact created"`
}

// List is an unpaginated list (small, bounded collections such as a
// record's tasks or the deal stages).
type List[T any] struct {
	Success bool `json:"success" const:"true"`
	Data    []T  `json:"data" nullable:"false"`
}

// Page is one page of a list with its position; data is never null and
// last_page is at least 1.
type Page[T any] struct {
	Success     bool `json:"success,omitempty" description:"Present on some lists; always true when present."`
	Data        []T  `json:"data" nullable:"false"`
	CurrentPage int  `json:"current_page" minimum:"1" example:"1"`
	LastPage    int  `json:"last_page" minimum:"1" example:"4"`
	PerPage     int  `json:"per_page" minimum:"1" maximum:"100" example:"25"`
	Total       int  `json:"total" minimum:"0" example:"87"`
}

// Deleted answers a successful DELETE (and logout).
type Deleted struct {
	Success bool   `json:"success" const:"true"`
	Message string `json:"message" example:"Contact deleted"`
}

// FieldError is one invalid field of a validation_failed problem.
type FieldError struct {
	Field   string `json:"field" example:"email"`
	Message string `json:"message" example:"must be a valid email address"`
}

// Problem is every error answer, application/problem+json (RFC 9457).
// Type resolves to a page explaining Code. Some codes add extension
// members (already_qualified names the contact_id, company_id and deal_id
// the lead became), so other members are allowed.
type Problem struct {
	_         struct{}     `additionalProperties:"true"`
	Type      string       `json:"type" format:"uri-reference" example:"/docs/problems#validation_failed"`
	Title     string       `json:"title" example:"Unprocessable Entity"`
	Status    int          `json:"status" minimum:"400" maximum:"599" example:"422"`
	Detail    string       `json:"detail,omitempty" example:"one or more fields are invalid"`
	Code      string       `json:"code" example:"validation_failed"`
	RequestID string       `json:"request_id,omitempty" example:"01J9Z7Q4W1V6M8K2N3P5R7T9X0"`
	Errors    []FieldError `json:"errors,omitempty"`
}

// ImportResult answers a CSV import.
type ImportResult struct {
	Success  bool     `json:"success" const:"true"`
	Message  string   `json:"message" example:"Imported 98 contacts, skipped 2"`
	Imported int      `json:"imported" minimum:"0" example:"98"`
	Skipped  int      `json:"skipped" minimum:"0" example:"2"`
	Errors   []string `json:"errors" nullable:"false" maxItems:"1000" description:"One line per skipped row (at most 1000)." example:"[\"row 7: email: must be a valid email address\"]"`
}
