package leadsapi

import "github.com/opencrm/crm/pkg/contract/envelope"

// LeadImportResult answers ImportLeads: the common import result, and
// the rows skipped because an existing lead already has their email, each
// naming that lead (a row is flagged, never silently made a second
// record).
type LeadImportResult struct {
	envelope.ImportResult
	Duplicates []LeadImportDuplicate `json:"duplicates,omitempty" maxItems:"1000" description:"Present when rows were skipped because a lead already has their email (compared ignoring case): one entry per such row, in row order: the first 1000 such rows (each is also in errors while errors has room). A row repeating an earlier row of the file is in errors only."`
}

// LeadImportDuplicate is one row of an import whose email an existing lead
// already has.
type LeadImportDuplicate struct {
	Row         int    `json:"row" minimum:"2" example:"5" description:"The row of the file (the header is row 1)."`
	Email       string `json:"email" example:"old@example.com" description:"The row's email, as the file has it."`
	DuplicateOf int64  `json:"duplicate_of" minimum:"1" example:"42" description:"The existing lead with that email (the oldest, when several have it)."`
}
