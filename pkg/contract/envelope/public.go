// Package envelope holds the JSON envelopes every public route of the API
// answers with (see docs/api.md): one record, a list, a page of a list, a
// deletion. They are generic over the record so the OpenAPI document
// names one schema per record and envelope (ContactPage, DealRecord...).
package envelope

// Record is the answer carrying one record.
type Record[T any] struct {
	Success bool   `json:"success" const:"true"`
	Data    T      `json:"data"`
	Message string `json:"message,omitempty" example:"Contact created" description:"What a write did, in words (each operation's example gives its own); absent on reads."`
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

// ImportResult answers a CSV import (POST /contacts/import and
// /leads/import, see docs/import.md): the counts, why rows were skipped,
// and how the file was read, so a caller sees what was made of another
// system's export and that nothing was dropped silently.
type ImportResult struct {
	Success  bool     `json:"success" const:"true"`
	Message  string   `json:"message" example:"Imported 98 contacts, skipped 2" description:"\"Imported N contacts, skipped M\" (leads for a lead import); a dry run says \"Dry run: would import N contacts, skipped M\"."`
	Imported int      `json:"imported" minimum:"0" example:"98" description:"Rows written (a dry run: rows that would be written)."`
	Skipped  int      `json:"skipped" minimum:"0" example:"2" description:"Rows not written: invalid, or a duplicate email within the file or of an existing record."`
	Errors   []string `json:"errors" nullable:"false" maxItems:"1000" description:"One \"Row N: …\" per skipped row (the header is row 1), in row order, at most 1000." example:"[\"Row 3: last_name is required\"]"`
	// Encoding lists the names pkg/csvx reports (EncUTF8...).
	Encoding string `json:"encoding" enum:"UTF-8,UTF-8 with BOM,UTF-16LE,UTF-16BE,Windows-1252" example:"UTF-8" description:"How the file was decoded: UTF-8 with or without a byte order mark, UTF-16 with a byte order mark, or Windows-1252."`
	// Delimiter is a pattern, not an enum: the common generators turn enum
	// values into code and refuse one holding a control character (the tab).
	Delimiter      string   `json:"delimiter" pattern:"^[,;\\t]$" example:"," description:"The cell separator: \",\" (comma), \";\" (semicolon) or \"\\t\" (a tab character), the most frequent of the three on the header line (comma on a tie)."`
	IgnoredColumns []string `json:"ignored_columns" nullable:"false" example:"[\"Fax\",\"Home City\"]" description:"Every non-empty header label no field reads, in file order: columns without a field, a second label of a field already read, a full-name column beside first and last name columns, and columns the mapping set to \"\"."`
	DryRun         bool     `json:"dry_run" example:"false" description:"True when the form asked for a dry run: everything was checked, nothing was written."`
}

// ImportForm is the multipart/form-data body of a CSV import. The file is
// read as a stream, never held whole, so the options must come before it;
// an option after the file is a 422, not silently ignored.
type ImportForm struct {
	Mapping map[string]string `json:"mapping,omitempty" nullable:"false" example:"{\"Kontakt\":\"full_name\",\"Fax\":\"\"}" description:"Optional, before file. A JSON object from a header label of the file to a field name (docs/import.md lists them, full_name included), or to \"\" to ignore that column. It overrides recognition for the labels it names; the other columns are still recognised. A label the header lacks, an unknown field or two labels for one field is a 422 on field mapping. At most 64 KB."`
	DryRun  bool              `json:"dry_run,omitempty" example:"true" description:"Optional, before file. true (or 1) validates everything, duplicates against the table included, and answers as an import would with dry_run true; nothing is written. Default false."`
	File    string            `json:"file" contentMediaType:"text/csv" description:"The CSV or tab-separated file, last in the form: at most 20 MB and 100,000 data rows; UTF-8 (with or without a byte order mark), UTF-16 with a byte order mark, or Windows-1252."`
}
