package gateway

// body kinds of an operation's request and success response.
const (
	bNone      = ""
	bJSON      = "json"      // JSON object
	bMultipart = "multipart" // multipart/form-data with a "file" field
	bPage      = "page"      // pagination envelope
	bList      = "list"      // {success, data: [...]}
	bRecord    = "record"    // {success, data: {...}, message?}
	bDeleted   = "deleted"   // {success, message}
	bCSV       = "csv"       // text/csv download
	bPDF       = "pdf"       // application/pdf download
	bDOCX      = "docx"      // Word download
	bRaw       = "raw"       // a custom JSON body described by Schema
)

// Operation is one documented endpoint of the public API, with paths as the
// client sees them under /api. The same list produces /openapi.json and
// /docs, and a test checks each operation against the routing Table, so
// the document cannot drift from what the gateway enforces.
type Operation struct {
	Method  string
	Path    string
	Tag     string
	Summary string
	Auth    Policy
	// Schema names the resource in components.schemas ("" for none).
	Schema  string
	Request string
	Success int
	Body    string
	Query   []Param
}

// Param is a query parameter; Enum lists its allowed values.
type Param struct {
	Name, Type, Desc string
	Enum             []string
	Required         bool
}

func qp(name, typ, desc string, enum ...string) Param {
	return Param{Name: name, Type: typ, Desc: desc, Enum: enum}
}

var (
	pageParams = []Param{
		qp("page", "integer", "Page number, default 1."),
		qp("per_page", "integer", "Page size, default 25, at most 100."),
		qp("search", "string", "Case-insensitive search term."),
		qp("sort_dir", "string", "ASC (default) or DESC.", "ASC", "DESC", "asc", "desc"),
	}
	scope = qp("scope", "string", "Whose records: mine, my team's, or the company's.", "me", "team", "company")
	// syncParams are the incremental sync filter (docs/api.md, "Incremental sync").
	syncParams = []Param{
		qp("updated_since", "string", "Records updated at or after this RFC 3339 timestamp (inclusive)."),
		qp("after_id", "integer", "Sync cursor: with updated_since, sort_by=updated_at and sort_dir=asc, only records whose (updated_at, id) comes after (updated_since, after_id)."),
	}
	contactQuery = append(append([]Param{}, pageParams...),
		qp("status", "string", "", "active", "inactive"), qp("company_id", "integer", ""),
		qp("assigned_to", "integer", "User id."), qp("source", "string", ""),
		qp("date_from", "string", "created_at from, YYYY-MM-DD."), qp("date_to", "string", "created_at to, YYYY-MM-DD."),
		scope, syncParams[0], syncParams[1],
		qp("sort_by", "string", "Default name.", "name", "email", "phone", "company_name", "status", "created_at", "updated_at"))
	leadQuery = append(append([]Param{}, pageParams...),
		qp("status", "string", "", "new", "contacted", "qualified", "disqualified"), qp("source", "string", ""),
		qp("assigned_to", "integer", "User id."),
		qp("date_from", "string", "created_at from, YYYY-MM-DD."), qp("date_to", "string", "created_at to, YYYY-MM-DD."),
		scope, syncParams[0], syncParams[1],
		qp("sort_by", "string", "Default name.", "name", "email", "company_name", "status", "source", "assigned_to_name", "created_at", "updated_at"))
	contractQuery = append(append([]Param{}, pageParams...),
		qp("status", "string", "One status or a comma-separated list of draft, active, executed, expired, terminated, archived."), qp("deal_id", "integer", ""),
		qp("expiring_within", "integer", "Days; active and executed contracts only."), syncParams[0], syncParams[1],
		qp("sort_by", "string", "Default contract_number.", "contract_number", "name", "company_name", "deal_title", "status", "effective_date", "termination_date", "created_at", "updated_at"))
	companyQuery = append(append([]Param{}, pageParams...), syncParams[0], syncParams[1],
		qp("sort_by", "string", "Default name.", "name", "created_at", "updated_at"))
	dealQuery = append(append([]Param{}, pageParams...),
		qp("status", "string", "One status or a comma-separated list of open, won, lost."),
		qp("stage_id", "integer", ""), qp("company_id", "integer", ""), qp("contact_id", "integer", ""),
		qp("assigned_to", "integer", "User id."), scope, syncParams[0], syncParams[1],
		qp("sort_by", "string", "Default created_at.", "title", "value", "stage", "expected_close_date", "created_at", "updated_at"))
	simplePage = pageParams
	userQuery  = append(append([]Param{}, pageParams...),
		qp("role", "string", "", "admin", "user"), qp("team_id", "integer", ""), qp("active", "string", "", "true", "false"),
		qp("sort_by", "string", "Default name.", "name", "email", "role", "created_at", "updated_at"))
	webhookQuery  = []Param{pageParams[0], pageParams[1]}
	deliveryQuery = []Param{pageParams[0], pageParams[1],
		qp("status", "string", "Only deliveries in this state.", "pending", "delivered", "failed")}
	eventQuery = []Param{
		qp("after", "string", "Cursor: the id of the last event seen (evt_...); events after it, oldest first. Without it the feed starts at the oldest event kept (30 days)."),
		qp("type", "string", "Only these event types, comma-separated (see the webhooks section)."),
		qp("limit", "integer", "Events per page, default 100, at most 1000."),
	}
	submissionQuery = append(append([]Param{}, pageParams...),
		qp("status", "string", "", "pending", "delivered", "failed", "spam"), qp("api_key_id", "integer", ""))
)

// activity adds the notes and tasks endpoints of a parent resource.
func activity(tag, base, parent string, listNotes bool) []Operation {
	ops := []Operation{}
	if listNotes {
		ops = append(ops, Operation{"GET", base + "/{id}/notes", tag, "List the " + parent + "'s notes, newest first", JWT, "Note", bNone, 200, bList, nil})
	}
	return append(ops,
		Operation{"POST", base + "/{id}/notes", tag, "Add a note to the " + parent, JWT, "Note", bJSON, 201, bRecord, nil},
		Operation{"DELETE", base + "/{id}/notes/{noteId}", tag, "Delete a note of the " + parent, JWT, "", bNone, 200, bDeleted, nil},
		Operation{"GET", base + "/{id}/tasks", tag, "List the " + parent + "'s tasks", JWT, "Task", bNone, 200, bList, nil},
		Operation{"POST", base + "/{id}/tasks", tag, "Add a task to the " + parent, JWT, "Task", bJSON, 201, bRecord, nil},
		Operation{"GET", base + "/{id}/tasks/{taskId}", tag, "Get a task of the " + parent, JWT, "Task", bNone, 200, bRecord, nil},
		Operation{"PUT", base + "/{id}/tasks/{taskId}", tag, "Update a task of the " + parent, JWT, "Task", bJSON, 200, bRecord, nil},
		Operation{"DELETE", base + "/{id}/tasks/{taskId}", tag, "Delete a task of the " + parent, JWT, "", bNone, 200, bDeleted, nil},
	)
}
func crud(tag, base, schema, noun string, auth Policy, listBody string, query []Param) []Operation {
	return []Operation{
		{"GET", base, tag, "List " + noun + "s", auth, schema, bNone, 200, listBody, query},
		{"POST", base, tag, "Create a " + noun, auth, schema, bJSON, 201, bRecord, nil},
		{"GET", base + "/{id}", tag, "Get a " + noun, auth, schema, bNone, 200, bRecord, nil},
		{"PUT", base + "/{id}", tag, "Update a " + noun, auth, schema, bJSON, 200, bRecord, nil},
		{"DELETE", base + "/{id}", tag, "Delete a " + noun, auth, "", bNone, 200, bDeleted, nil},
	}
}

// Operations is the public API, one entry per documented operation (the
// conventions they share are in docs/api.md).
func Operations() []Operation {
	var ops []Operation
	add := func(o ...Operation) { ops = append(ops, o...) }

	add(
		Operation{"POST", "/auth/login", "Auth", "Log in with email and password; returns an access and a refresh token", Public, "Login", bJSON, 200, bRaw, nil},
		Operation{"POST", "/auth/refresh", "Auth", "Rotate a refresh token into a new token pair", Public, "Login", bJSON, 200, bRaw, nil},
		Operation{"POST", "/auth/logout", "Auth", "Revoke a refresh token", Public, "", bJSON, 200, bDeleted, nil},
		Operation{"GET", "/auth/me", "Auth", "The caller's user record", JWT, "User", bNone, 200, bRecord, nil},
		Operation{"GET", "/auth/jwks", "Auth", "Public keys that sign access tokens (JWKS)", Public, "JWKS", bNone, 200, bRaw, nil},
		Operation{"POST", "/auth/keys/rotate", "Auth", "Rotate the token signing key", Admin, "RotatedKey", bNone, 200, bRecord, nil},
	)
	add(crud("Users", "/users", "User", "user", Admin, bPage, userQuery)...)
	ops[len(ops)-1].Summary = "Deactivate a user (users stay referenced)"
	add(crud("Teams", "/teams", "Team", "team", Admin, bList, nil)...)
	add(
		Operation{"GET", "/api-keys", "API keys", "List API keys (without secrets)", Admin, "APIKey", bNone, 200, bList, nil},
		Operation{"POST", "/api-keys", "API keys", "Create an API key; the secret is returned once", Admin, "APIKey", bJSON, 201, bRecord, nil},
		Operation{"DELETE", "/api-keys/{id}", "API keys", "Revoke an API key (effective within 5 s)", Admin, "", bNone, 200, bDeleted, nil},
	)
	add(
		Operation{"GET", "/access-tokens", "Access tokens", "List integration tokens (prefix, scopes, role, last use; without secrets)", Admin, "AccessToken", bNone, 200, bList, nil},
		Operation{"POST", "/access-tokens", "Access tokens", "Create an integration token; the secret (crm_pat_...) is returned once", Admin, "AccessToken", bJSON, 201, bRecord, nil},
		Operation{"DELETE", "/access-tokens/{id}", "Access tokens", "Revoke an integration token (effective within 5 s)", Admin, "", bNone, 200, bDeleted, nil},
	)

	add(crud("Contacts", "/contacts", "Contact", "contact", JWT, bPage, contactQuery)...)
	add(activity("Contacts", "/contacts", "contact", true)...)
	add(
		Operation{"GET", "/contacts/{id}/linked-emails", "Contacts", "Synced emails linked to the contact, newest first", JWT, "EmailSummary", bNone, 200, bPage, simplePage},
		Operation{"GET", "/contacts/export", "Contacts", "Export contacts as CSV (accepts the list filters)", Admin, "", bNone, 200, bCSV, contactQuery},
		Operation{"GET", "/contacts/template", "Contacts", "CSV import template (header line)", Admin, "", bNone, 200, bCSV, nil},
		Operation{"POST", "/contacts/import", "Contacts", "Import contacts from CSV (≤ 20 MB, 100,000 rows)", Admin, "ImportResult", bMultipart, 200, bRaw, nil},
	)
	add(crud("Companies", "/companies", "Company", "company", JWT, bPage, companyQuery)...)
	ops[len(ops)-4].Summary = "Create a company"
	ops[len(ops)-1].Summary = "Delete a company (its contacts are unlinked)"

	add(crud("Leads", "/leads", "Lead", "lead", JWT, bPage, leadQuery)...)
	add(
		Operation{"POST", "/leads/{id}/qualify", "Leads", "Qualify a lead into a contact, optionally a company and a deal", JWT, "Qualify", bJSON, 200, bRaw, nil},
		Operation{"PUT", "/leads/{id}/disqualify", "Leads", "Disqualify a lead with an optional reason", JWT, "Lead", bJSON, 200, bRecord, nil},
	)
	add(activity("Leads", "/leads", "lead", true)...)
	add(
		Operation{"GET", "/leads/{id}/linked-emails", "Leads", "Synced emails linked to the lead, newest first", JWT, "EmailSummary", bNone, 200, bPage, simplePage},
		Operation{"GET", "/leads/export", "Leads", "Export leads as CSV (accepts the list filters)", Admin, "", bNone, 200, bCSV, leadQuery},
		Operation{"GET", "/leads/template", "Leads", "CSV import template (header line)", Admin, "", bNone, 200, bCSV, nil},
		Operation{"GET", "/leads/match-company", "Leads", "Existing companies matching a company name, best first", JWT, "CompanyMatch", bNone, 200, bList, []Param{{Name: "company", Type: "string", Desc: "Company name.", Required: true}}},
		Operation{"GET", "/leads/match-contact", "Leads", "Existing contacts matching an email", JWT, "Contact", bNone, 200, bList, []Param{{Name: "email", Type: "string", Desc: "Email address.", Required: true}}},
		Operation{"POST", "/leads/import", "Leads", "Import leads from CSV (≤ 20 MB, 100,000 rows)", JWT, "ImportResult", bMultipart, 200, bRaw, nil},
	)

	add(
		Operation{"GET", "/deal-stages", "Deals", "List deal stages in order", JWT, "DealStage", bNone, 200, bList, nil},
		Operation{"GET", "/deal-stages/{id}", "Deals", "Get a deal stage", JWT, "DealStage", bNone, 200, bRecord, nil},
		Operation{"POST", "/deal-stages", "Deals", "Add a deal stage", Admin, "DealStage", bJSON, 201, bRecord, nil},
		Operation{"PUT", "/deal-stages/{id}", "Deals", "Rename or reorder a deal stage", Admin, "DealStage", bJSON, 200, bRecord, nil},
		Operation{"DELETE", "/deal-stages/{id}", "Deals", "Delete a deal stage", Admin, "", bNone, 200, bDeleted, nil},
	)
	add(crud("Deals", "/deals", "Deal", "deal", JWT, bPage, dealQuery)...)
	add(
		Operation{"GET", "/deals/{id}/quotes", "Deals", "List the deal's quotes", JWT, "Quote", bNone, 200, bList, nil},
		Operation{"POST", "/deals/{id}/quotes", "Deals", "Create a quote (totals computed in decimal)", JWT, "Quote", bJSON, 201, bRecord, nil},
		Operation{"GET", "/quotes/{id}", "Deals", "Get a quote", JWT, "Quote", bNone, 200, bRecord, nil},
		Operation{"PUT", "/quotes/{id}", "Deals", "Update a quote", JWT, "Quote", bJSON, 200, bRecord, nil},
		Operation{"DELETE", "/quotes/{id}", "Deals", "Delete a quote", JWT, "", bNone, 200, bDeleted, nil},
	)

	add(crud("Contracts", "/contracts", "Contract", "contract", JWT, bPage, contractQuery)...)
	ops[len(ops)-4].Summary = "Generate a contract for a deal from a template"
	ops[len(ops)-2].Summary = "Update a contract (status changes go through status)"
	add(
		Operation{"GET", "/contracts/{id}/pdf", "Contracts", "Download the contract as PDF (A4)", JWT, "", bNone, 200, bPDF, nil},
		Operation{"GET", "/contracts/{id}/docx", "Contracts", "Download the contract as Word .docx", JWT, "", bNone, 200, bDOCX, nil},
		Operation{"PUT", "/contracts/{id}/regenerate", "Contracts", "Re-apply template and merge tags", JWT, "Contract", bNone, 200, bRecord, nil},
	)
	add(activity("Contracts", "/contracts", "contract", true)...)
	add(
		Operation{"POST", "/contracts/{id}/executed", "Contracts", "Upload the signed copy (PDF, ≤ 25 MB; 409 when one exists)", JWT, "Contract", bMultipart, 201, bRecord, nil},
		Operation{"GET", "/contracts/{id}/executed", "Contracts", "Download the signed copy", JWT, "", bNone, 200, bPDF, nil},
		Operation{"DELETE", "/contracts/{id}/executed", "Contracts", "Delete the signed copy", Admin, "", bNone, 200, bDeleted, nil},
	)
	add(crud("Contract templates", "/contract-templates", "ContractTemplate", "contract template", Admin, bList, nil)...)
	add(
		Operation{"GET", "/contract-templates/tags", "Contract templates", "Merge tags grouped by entity", Admin, "MergeTags", bNone, 200, bRaw, nil},
		Operation{"GET", "/contract-templates/tags/pdf", "Contract templates", "Merge-tag catalogue as PDF", Admin, "", bNone, 200, bPDF, nil},
	)

	add(
		Operation{"POST", "/public/leads", "Public API", "Create a lead from an external source (≤ 64 KB; Idempotency-Key honoured)", Key, "PublicLead", bJSON, 201, bRaw, nil},
		Operation{"GET", "/intake/submissions", "Public API", "List public lead submissions", Admin, "Submission", bNone, 200, bPage, submissionQuery},
		Operation{"GET", "/intake/submissions/{id}", "Public API", "Get a public lead submission", Admin, "Submission", bNone, 200, bRecord, nil},
	)

	add(
		Operation{"POST", "/emails", "Emails", "Store a synced email message (a repeated message_id is a no-op)", JWT, "Email", bJSON, 201, bRecord, nil},
		Operation{"GET", "/mailboxes", "Emails", "The caller's IMAP mailboxes (every mailbox for an admin)", JWT, "Mailbox", bNone, 200, bList, nil},
		Operation{"POST", "/mailboxes", "Emails", "Connect an IMAP mailbox (the password is sealed and never returned); the first sync is queued", JWT, "Mailbox", bJSON, 201, bRecord, nil},
		Operation{"GET", "/mailboxes/{id}", "Emails", "Get a mailbox (owner or admin)", JWT, "Mailbox", bNone, 200, bRecord, nil},
		Operation{"PUT", "/mailboxes/{id}", "Emails", "Update a mailbox (owner or admin; changing host, port or username, or turning TLS off, needs the password)", JWT, "Mailbox", bJSON, 200, bRecord, nil},
		Operation{"DELETE", "/mailboxes/{id}", "Emails", "Disconnect a mailbox (its messages stay)", JWT, "", bNone, 200, bDeleted, nil},
		Operation{"POST", "/mailboxes/{id}/sync", "Emails", "Queue a sync of the mailbox now", JWT, "Mailbox", bNone, 200, bRecord, nil},
		Operation{"GET", "/emails/{id}", "Emails", "One email: a message synced from a mailbox is private to its owner and admins unless read through a contact or lead it is linked to", JWT, "Email", bNone, 200, bRecord, []Param{
			qp("contact_id", "integer", "Read through this linked contact."), qp("lead_id", "integer", "Read through this linked lead."),
		}},
	)
	add(crud("Webhooks", "/webhooks", "Webhook", "webhook subscription", Admin, bPage, webhookQuery)...)
	add(
		Operation{"POST", "/webhooks/{id}/rotate-secret", "Webhooks", "Rotate the signing secret; the new one is returned once", Admin, "Webhook", bNone, 200, bRecord, nil},
		Operation{"POST", "/webhooks/{id}/test", "Webhooks", "Send a ping event to the subscription now and return its delivery", Admin, "WebhookDelivery", bNone, 200, bRecord, nil},
		Operation{"GET", "/webhooks/{id}/deliveries", "Webhooks", "The subscription's delivery log, newest first", Admin, "WebhookDelivery", bNone, 200, bPage, deliveryQuery},
		Operation{"POST", "/webhooks/{id}/deliveries/{deliveryId}/retry", "Webhooks", "Send a delivery again now", Admin, "WebhookDelivery", bNone, 200, bRecord, nil},
		Operation{"GET", "/events", "Webhooks", "The events feed: every change, oldest first, with a cursor (30 days kept)", Admin, "", bNone, 200, bRaw, eventQuery},
	)
	return ops
}

// OperationScopes is the integration-token scope an operation needs, as
// the routing Table enforces it (empty: any token); the document is derived
// from the table so it cannot state another scope than the one checked.
func OperationScopes(op Operation) []string {
	rt := Match(Table, op.Method, op.Path)
	if rt == nil {
		return []string{}
	}
	if s := rt.Scope(op.Method); s != "" {
		return []string{s}
	}
	return []string{}
}
