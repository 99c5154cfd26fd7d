package contactsapi

import (
	"net/http"

	"github.com/opencrm/crm/pkg/contract/envelope"
	"github.com/opencrm/crm/pkg/contract/mergeapi"
	"github.com/opencrm/crm/pkg/contract/route"
	"github.com/opencrm/crm/pkg/timestamp"
)

// Reasons a pair of records is a duplicate candidate.
const (
	ReasonEmail  = "email"  // contacts: the same e-mail, ignoring case
	ReasonPhone  = "phone"  // contacts: the same number in E.164 (phone, else mobile)
	ReasonName   = "name"   // contacts: similar names within one company; companies: similar names
	ReasonDomain = "domain" // companies: the same domain, ignoring case
)

// Merge states.
const (
	MergeRunning   = "running"
	MergeCompleted = "completed"
)

// Codes of the merge's refusals (problem bodies).
const (
	// CodeMerged is the 404 of a merged record's id; the body's
	// merged_into names the record it was merged into.
	CodeMerged = "merged"
	// CodeMergeRunning is the 409 of a merge naming a record another
	// merge is still moving pointers to.
	CodeMergeRunning = "merge_running"
	// CodeMergeConflict is the 409 of a merge repeating an earlier one's
	// survivor and merged records with other field choices.
	CodeMergeConflict = "merge_conflict"
)

// MergedInto is the problem body member of a CodeMerged 404.
const MergedInto = "merged_into"

// DuplicatePair is a candidate pair: ids[0] is the record asked about
// (GET /contacts/{id}/duplicates) or the lower id (the lists), records
// the two records as GET answers them.
type DuplicatePair[T any] struct {
	IDs     [2]int64 `json:"ids" example:"[42,57]"`
	Records [2]T     `json:"records"`
	Score   float64  `json:"score" minimum:"0" maximum:"1" example:"0.98" description:"How likely the pair is one person (one organisation): 1-Π(1-w) over the reasons, email 0.9, phone 0.8, domain 0.9, name 0.6×similarity."`
	Reasons []string `json:"reasons" nullable:"false" example:"[\"email\",\"phone\"]" description:"email, phone, name (contacts); domain, name (companies)."`
}

// DuplicatePage is one page of the candidate pairs, ascending by ids;
// next is the after cursor of the following page, null on the last.
type DuplicatePage[T any] struct {
	Success bool               `json:"success" const:"true"`
	Data    []DuplicatePair[T] `json:"data" nullable:"false"`
	PerPage int                `json:"per_page" minimum:"1" maximum:"100" example:"25"`
	Next    *string            `json:"next" example:"42,57"`
}

// DismissInput is the body of POST /contacts/duplicates/dismiss and
// /companies/duplicates/dismiss: the pair is not shown again.
type DismissInput struct {
	IDs []int64 `json:"ids" minItems:"2" maxItems:"2" example:"[42,57]"`
}

// Dismissed answers a dismissal.
type Dismissed struct {
	IDs [2]int64 `json:"ids" example:"[42,57]"`
}

// MergeInput is the body of POST /contacts/{id}/merge and
// /companies/{id}/merge: {id} survives, merge_ids are merged into it.
type MergeInput struct {
	MergeIDs []int64 `json:"merge_ids" minItems:"1" maxItems:"10" example:"[57]"`
	// Fields chooses, per field, the record whose value the survivor
	// keeps (its id: {id} or one of merge_ids); a custom field is
	// "custom_fields.<name>".
	Fields map[string]int64 `json:"fields,omitempty" example:"{\"email\":57}" description:"Field name (or custom_fields.<name>) → the id of the record whose value survives. Unnamed fields keep the survivor's value where set, else the newest non-empty one among the merged records; tags and multi-enum custom fields are united."`
}

// MergeStep is one mover's part of a merge (mergeapi.Movers).
type MergeStep struct {
	Context  string         `json:"context" example:"deals"`
	Status   string         `json:"status" enum:"pending,done" example:"done"`
	Moved    mergeapi.Moved `json:"moved" nullable:"true" description:"What the context repointed, by kind." example:"{\"deals\":2}"`
	Attempts int            `json:"attempts" minimum:"0" example:"1"`
	Error    string         `json:"error,omitempty" description:"The last failure, while pending."`
}

// Merge is a merge's state: running until every context moved its
// pointers to the survivor, then completed.
type Merge struct {
	ID          int64            `json:"id" minimum:"1" example:"3"`
	Object      string           `json:"object" enum:"contact,company" example:"contact"`
	Survivor    int64            `json:"survivor" minimum:"1" example:"42"`
	Merged      []int64          `json:"merged" nullable:"false" example:"[57]"`
	Fields      map[string]int64 `json:"fields" nullable:"false"`
	Status      string           `json:"status" enum:"running,completed" example:"completed"`
	Steps       []MergeStep      `json:"steps" nullable:"false"`
	CreatedAt   timestamp.Time   `json:"created_at"`
	CompletedAt *timestamp.Time  `json:"completed_at"`
}

// MergedEvent is the data of contact.merged and company.merged.
type MergedEvent struct {
	MergeID  int64   `json:"merge_id"`
	Survivor int64   `json:"survivor_id"`
	Merged   []int64 `json:"merged_ids"`
}

// Event types of a merge on crm:events:contacts.
const (
	EventContactMerged = "contact.merged"
	EventCompanyMerged = "company.merged"
)

// ImportDuplicate is a row of a contact import skipped because a stored
// contact has its e-mail: duplicate_of is that contact's id.
type ImportDuplicate struct {
	Row         int    `json:"row" minimum:"2" example:"3"`
	Email       string `json:"email" example:"ada@example.com"`
	DuplicateOf int64  `json:"duplicate_of" minimum:"1" example:"42"`
}

// ContactImportResult answers a contact import: the import envelope and
// the rows skipped as duplicates of stored contacts.
type ContactImportResult struct {
	envelope.ImportResult
	Duplicates []ImportDuplicate `json:"duplicates,omitempty" maxItems:"1000" description:"Present when rows were skipped because a stored contact already has their e-mail (compared ignoring case): one entry per such row naming that contact (the oldest), in row order, among the first 1000 skipped rows. A row repeating an earlier row of the file is in errors only."`
}

var duplicatesQuery = []route.Param{route.PerPage,
	route.Q("after", "string", "Cursor: the next of the previous page (\"a,b\"); absent for the first page.")}

// mergeProblems: a record of a running merge, a conflicting retry.
var mergeProblems = []int{http.StatusConflict}

// The duplicate and merge routes.
var (
	ListContactDuplicates = route.Route{Method: http.MethodGet, Path: "/contacts/duplicates", Service: Service, Auth: route.JWT,
		Resource: Resource, Tag: "Contacts", Summary: "List duplicate contact candidates",
		Description: "Pairs sharing an e-mail (ignoring case) or a phone number (E.164), or with similar names in one company; dismissed pairs are left out.",
		Query:       duplicatesQuery, Response: DuplicatePage[Contact]{}}
	ContactDuplicates = route.Route{Method: http.MethodGet, Path: "/contacts/{id}/duplicates", Service: Service, Auth: route.JWT,
		Resource: Resource, Tag: "Contacts", Summary: "List a contact's duplicate candidates, best first",
		Response: envelope.List[DuplicatePair[Contact]]{}}
	DismissContactDuplicate = route.Route{Method: http.MethodPost, Path: "/contacts/duplicates/dismiss", Service: Service, Auth: route.JWT,
		Resource: Resource, Tag: "Contacts", Summary: "Dismiss a duplicate pair of contacts", Request: DismissInput{},
		Response: envelope.Record[Dismissed]{}, Message: "Duplicate dismissed"}
	MergeContacts = route.Route{Method: http.MethodPost, Path: "/contacts/{id}/merge", Service: Service, Auth: route.JWT,
		Resource: Resource, Tag: "Contacts", Summary: "Merge contacts into this one",
		Description: "Idempotent: the same survivor, merge_ids and fields answer the same merge.",
		Request:     MergeInput{}, Response: envelope.Record[Merge]{}, Message: "Records merged", Problems: mergeProblems}

	ListCompanyDuplicates = route.Route{Method: http.MethodGet, Path: "/companies/duplicates", Service: Service, Auth: route.JWT,
		Resource: Resource, Tag: "Companies", Summary: "List duplicate company candidates",
		Description: "Pairs sharing a domain (ignoring case) or with similar names; dismissed pairs are left out.",
		Query:       duplicatesQuery, Response: DuplicatePage[Company]{}}
	CompanyDuplicates = route.Route{Method: http.MethodGet, Path: "/companies/{id}/duplicates", Service: Service, Auth: route.JWT,
		Resource: Resource, Tag: "Companies", Summary: "List a company's duplicate candidates, best first",
		Response: envelope.List[DuplicatePair[Company]]{}}
	DismissCompanyDuplicate = route.Route{Method: http.MethodPost, Path: "/companies/duplicates/dismiss", Service: Service, Auth: route.JWT,
		Resource: Resource, Tag: "Companies", Summary: "Dismiss a duplicate pair of companies", Request: DismissInput{},
		Response: envelope.Record[Dismissed]{}, Message: "Duplicate dismissed"}
	MergeCompanies = route.Route{Method: http.MethodPost, Path: "/companies/{id}/merge", Service: Service, Auth: route.JWT,
		Resource: Resource, Tag: "Companies", Summary: "Merge companies into this one",
		Description: "Idempotent: the same survivor, merge_ids and fields answer the same merge.",
		Request:     MergeInput{}, Response: envelope.Record[Merge]{}, Message: "Records merged", Problems: mergeProblems}

	GetMerge = route.Route{Method: http.MethodGet, Path: "/merges/{id}", Service: Service, Auth: route.JWT,
		Resource: Resource, Tag: "Contacts", Summary: "Get a merge's state", Response: envelope.Record[Merge]{}}
)

// MergeRoutes are the duplicate and merge routes, in the document's order.
var MergeRoutes = []route.Route{
	ListContactDuplicates, DismissContactDuplicate, ContactDuplicates, MergeContacts,
	ListCompanyDuplicates, DismissCompanyDuplicate, CompanyDuplicates, MergeCompanies, GetMerge,
}
