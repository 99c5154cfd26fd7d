package gateway

import (
	"encoding/json"

	"github.com/opencrm/crm/pkg/contract/envelope"
	"github.com/opencrm/crm/pkg/contract/mailapi"
	"slices"
	"strconv"
	"strings"
)

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
		Operation{"POST", "/auth/keys/rotate", "Auth", "Rotate the token signing key", Admin, "", bNone, 200, bRecord, nil},
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
	return ops
}

type obj = map[string]any

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

// OpenAPI builds the OpenAPI 3.1 document of the public API: the paths
// from Operations, every schema reflected from the Go wire types of
// pkg/contract (never typed by hand), so the document says what the
// services encode.
func OpenAPI() (obj, error) {
	set := newSchemaSet()
	problemRef := set.ref(envelope.Problem{})
	paths := obj{}
	tagObjs := []obj{}
	seen := map[string]bool{}
	for _, op := range Operations() {
		item, _ := paths[op.Path].(obj)
		if item == nil {
			item = obj{}
			paths[op.Path] = item
		}
		item[strings.ToLower(op.Method)] = operationObject(set, op)
		if !seen[op.Tag] {
			seen[op.Tag] = true
			tagObjs = append(tagObjs, obj{"name": op.Tag, "description": tagDescriptions[op.Tag]})
		}
	}
	schemas, err := set.components()
	if err != nil {
		return nil, err
	}
	responses := problemResponses(problemRef)
	// Examples are built once the schemas are known.
	for _, item := range paths {
		for _, o := range item.(obj) {
			addExamples(o.(obj), schemas)
		}
	}
	return obj{
		"openapi": "3.1.0",
		"info": obj{
			"title":   "OpenCRM API",
			"version": "1.0.0",
			"summary": "Contacts, leads, deals, contracts and mail of OpenCRM.",
			"description": "The CRM's public API. Every path is under /api. JSON in and out; errors are " +
				"RFC 9457 application/problem+json with a stable `code` whose `type` links to its explanation " +
				"under /docs/problems. Timestamps are UTC with microseconds. Conventions (envelopes, pagination, " +
				"authentication, CSV, idempotency) are described in docs/api.md of the repository.",
			"license": obj{"name": "MIT", "identifier": "MIT"},
			"contact": obj{"name": "OpenCRM maintainers", "url": "https://github.com/opencrm/crm"},
		},
		"servers": []obj{{"url": "/api", "description": "This gateway"}},
		"tags":    tagObjs,
		"paths":   paths,
		"components": obj{
			"securitySchemes": obj{
				"bearerAuth": obj{"type": "http", "scheme": "bearer", "bearerFormat": "JWT",
					"description": "Access token from POST /auth/login (EdDSA, 15 minutes)."},
				"accessToken": obj{"type": "http", "scheme": "bearer", "bearerFormat": "crm_pat_...",
					"description": "Integration token from POST /access-tokens, sent as Authorization: Bearer crm_pat_... . " +
						"It acts as its own service user, limited to its scopes: contacts, leads, deals, contracts, emails, webhooks " +
						"with :read or :write (write implies read; companies, notes, tasks and CSV belong to their parent) and admin. " +
						"Each operation lists the scope it needs in x-scopes; a token without it gets 403 insufficient_scope."},
				"apiKey": obj{"type": "apiKey", "in": "header", "name": "X-API-Key",
					"description": "API key created by an admin; only on /public routes, where bearer tokens are refused."},
			},
			"schemas":   schemas,
			"responses": responses,
			"headers":   headerComponents(),
		},
	}, nil
}

// authDescriptions say who may call an operation.
var authDescriptions = map[Policy]string{
	Public: "No credential needed.",
	JWT:    "Needs a bearer access token.",
	Admin:  "Needs a bearer access token of a user with the admin role.",
	Key:    "Needs an API key in X-API-Key; bearer tokens are refused.",
}

// tagDescriptions introduce each section of the reference.
var tagDescriptions = map[string]string{
	"Auth":               "Log in, refresh and revoke tokens; the signing keys.",
	"Users":              "Accounts (admin only).",
	"Teams":              "Teams group users for scope=team (admin only).",
	"API keys":           "Keys for the public intake API (admin only).",
	"Access tokens":      "Integration tokens with scopes for server-to-server use of the whole API (admin only).",
	"Contacts":           "People, with their notes, tasks, linked emails and CSV import/export. The Contact record:\n\n<SchemaDefinition schemaRef=\"#/components/schemas/Contact\" />",
	"Companies":          "Organisations contacts and deals belong to.",
	"Leads":              "Prospects, qualified into contacts, companies and deals.",
	"Deals":              "The pipeline: stages, deals and quotes (money in decimal).",
	"Contracts":          "Contracts generated from templates, as PDF and Word, with signed copies.",
	"Contract templates": "HTML templates with merge tags.",
	"Public API":         "Lead intake for web forms and other systems, with an API key.",
	"Emails":             "Synced email and IMAP mailboxes.",
}

// headerComponents are the response headers the operations reference.
func headerComponents() obj {
	intHeader := func(desc string) obj {
		return obj{"description": desc, "schema": obj{"type": "integer", "minimum": 0}}
	}
	return obj{
		"RateLimit-Limit":     intHeader("Requests allowed in the current window (per user, per IP, or per API key on /public)."),
		"RateLimit-Remaining": intHeader("Requests left in the current window."),
		"RateLimit-Reset":     intHeader("Seconds until the window starts over."),
		"Retry-After":         intHeader("Seconds to wait before retrying."),
		"Location":            obj{"description": "URL of the created resource.", "schema": obj{"type": "string", "format": "uri-reference"}},
		"X-Request-Id":        obj{"description": "The request's id, also in problem bodies and logs.", "schema": obj{"type": "string"}},
		"Link": obj{"description": "`</docs>; rel=\"help\"`: the API documentation, for whoever opens the downloaded template.",
			"schema": obj{"type": "string"}},
	}
}

func headerRef(name string) obj { return obj{"$ref": "#/components/headers/" + name} }

// rateHeaders are sent on every answer of a rate-limited request.
func rateHeaders() obj {
	return obj{
		"RateLimit-Limit":     headerRef("RateLimit-Limit"),
		"RateLimit-Remaining": headerRef("RateLimit-Remaining"),
		"RateLimit-Reset":     headerRef("RateLimit-Reset"),
		"X-Request-Id":        headerRef("X-Request-Id"),
	}
}

func operationObject(set *schemaSet, op Operation) obj {
	o := obj{
		"tags":        []string{op.Tag},
		"summary":     op.Summary,
		"operationId": operationID(op),
	}
	desc := op.Summary + ". " + authDescriptions[op.Auth]
	switch op.Auth {
	case Public:
		o["security"] = []obj{}
	case JWT, Admin:
		scopes := OperationScopes(op)
		// The scope goes in x-scopes: OpenAPI lists scopes in a security
		// requirement for OAuth2 schemes only, and these tokens have no flow.
		o["security"] = []obj{{"bearerAuth": []string{}}, {"accessToken": []string{}}}
		o["x-scopes"] = scopes
		if op.Auth == Admin {
			o["x-admin"] = true
		}
		if len(scopes) > 0 {
			desc += " An integration token needs the " + scopes[0] + " scope."
		} else {
			desc += " Any integration token may call it."
		}
	case Key:
		o["security"] = []obj{{"apiKey": []string{}}}
	}
	if note := notes[op.Method+" "+op.Path]; note != "" {
		desc += "\n\n" + note
	}
	o["description"] = desc
	var params []obj
	for _, name := range pathParams(op.Path) {
		params = append(params, obj{"name": name, "in": "path", "required": true,
			"description": "Record id.", "schema": obj{"type": "integer", "minimum": 1}})
	}
	for _, q := range op.Query {
		params = append(params, queryParam(q))
	}
	if op.Auth == Key {
		params = append(params, obj{"name": "Idempotency-Key", "in": "header", "required": false,
			"description": "Replays the first answer for 24 h when the same key is sent again with the same body; 409 with another body.",
			"schema":      obj{"type": "string", "maxLength": 255}})
	}
	if len(params) > 0 {
		o["parameters"] = params
	}
	override := bodies[op.Method+" "+op.Path]
	switch op.Request {
	case bJSON:
		in := override.in
		if in == nil {
			in = resources[op.Schema].input
		}
		schema := obj{"type": "object"}
		if in != nil {
			schema = set.ref(in)
		}
		o["requestBody"] = obj{"required": !optionalBody[op.Method+" "+op.Path], "content": obj{"application/json": obj{"schema": schema}}}
	case bMultipart:
		schema := obj{
			"type": "object", "required": []string{"file"},
			"properties": obj{"file": obj{"type": "string", "contentMediaType": "application/octet-stream", "description": "The file."}},
		}
		rb := obj{"required": true}
		if override.in != nil {
			schema = set.ref(override.in)
			rb["description"] = "A multipart form whose optional mapping and dry_run fields come before file: " +
				"the file is streamed, so an option after it is refused (422) rather than ignored. See docs/import.md."
		}
		rb["content"] = obj{"multipart/form-data": obj{"schema": schema}}
		o["requestBody"] = rb
	}
	resp := obj{}
	resp[strconv.Itoa(op.Success)] = successResponse(set, op, override.out)
	for _, code := range errorCodes(op) {
		resp[code] = obj{"$ref": "#/components/responses/" + code}
	}
	for code := range extraResponses[op.Method+" "+op.Path] {
		if strings.HasPrefix(code, "2") {
			r := successResponse(set, op, override.out)
			r["description"] = extraResponses[op.Method+" "+op.Path][code]
			if op.Method+" "+op.Path == "POST /emails" {
				r["content"] = obj{"application/json": obj{"schema": obj{"anyOf": []obj{
					set.ref(envelope.Record[mailapi.Email]{}), set.ref(envelope.Record[mailapi.EmailRef]{}),
				}}}}
			}
			delete(r["headers"].(obj), "Location")
			resp[code] = r
			continue
		}
		resp[code] = obj{"$ref": "#/components/responses/" + code}
	}
	if op.Path == "/contacts/template" || op.Path == "/leads/template" {
		resp["200"].(obj)["headers"].(obj)["Link"] = headerRef("Link")
	}
	o["responses"] = resp
	return o
}

// importNote is what both CSV imports add to their description.
const importNote = "Files exported by HubSpot, Salesforce, Pipedrive, Zoho, Outlook and Google Contacts import " +
	"unchanged: their column labels and status values are recognised, and `mapping` names any other column. " +
	"`dry_run=true` checks everything and writes nothing. The answer says how the file was read " +
	"(`encoding`, `delimiter`) and which columns no field read (`ignored_columns`); invalid rows are skipped " +
	"with a reason in `errors`. A file rejected as a whole (not text, no data rows, missing name columns, " +
	"broken quoting, a bad `mapping` or `dry_run`) is a 422 naming the form field, over the limits a 413; " +
	"either way nothing is written. Recognised labels, encodings and status synonyms: docs/import.md of the repository."

// notes extend an operation's description where its summary is not enough.
var notes = map[string]string{
	"POST /contacts/import": importNote,
	"POST /leads/import":    importNote,
	"GET /contacts/template": "Any file laid out like it, or like another CRM's export (docs/import.md), imports without a mapping. " +
		"The Link header points at the API documentation.",
	"GET /leads/template": "Any file laid out like it, or like another CRM's export (docs/import.md), imports without a mapping. " +
		"The Link header points at the API documentation.",
}

// optionalBody lists the operations whose JSON body may be left out.
var optionalBody = map[string]bool{
	"POST /leads/{id}/qualify":   true,
	"PUT /leads/{id}/disqualify": true,
}

// queryParam documents a list query parameter with its type, enum and
// bounds.
func queryParam(q Param) obj {
	s := obj{"type": q.Type}
	switch q.Name {
	case "page":
		s["minimum"] = 1
		s["default"] = 1
	case "per_page":
		s["minimum"] = 1
		s["maximum"] = 100
		s["default"] = 25
	case "search":
		s["maxLength"] = 200
	case "sort_dir":
		s["enum"] = []string{"ASC", "DESC", "asc", "desc"}
		s["default"] = "ASC"
	case "date_from", "date_to":
		s["format"] = "date"
	case "updated_since":
		s["format"] = "date-time"
	case "company_id", "assigned_to", "deal_id", "contact_id", "lead_id", "team_id", "stage_id", "api_key_id", "after_id":
		s["minimum"] = 1
	case "expiring_within":
		s["minimum"] = 0
	}
	if len(q.Enum) > 0 {
		s["enum"] = q.Enum
	}
	p := obj{"name": q.Name, "in": "query", "required": q.Required, "schema": s}
	if q.Desc != "" {
		p["description"] = q.Desc
	}
	return p
}

// extraResponses are the answers an operation gives besides its success
// and the generic error codes: state conflicts and alternative successes.
var extraResponses = map[string]map[string]string{
	"POST /leads/{id}/qualify":         {"409": ""},
	"POST /public/leads":               {"202": "Accepted and stored; the lead is created when the leads service is back (data.id null, data.submission_id set)", "409": ""},
	"PUT /contracts/{id}":              {"409": ""},
	"PUT /contracts/{id}/regenerate":   {"409": ""},
	"POST /contracts/{id}/executed":    {"409": ""},
	"GET /contracts/{id}/pdf":          {"422": ""},
	"GET /contracts/{id}/docx":         {"422": ""},
	"GET /contract-templates/tags/pdf": {"422": ""},
	"DELETE /contracts/{id}":           {"409": ""},
	"DELETE /contract-templates/{id}":  {"409": ""},
	"DELETE /deal-stages/{id}":         {"409": ""},
	"PUT /deal-stages/{id}":            {"409": ""},
	"POST /users":                      {"409": ""},
	"PUT /users/{id}":                  {"409": ""},
	"DELETE /users/{id}":               {"409": ""},
	"POST /teams":                      {"409": ""},
	"PUT /teams/{id}":                  {"409": ""},
	"POST /emails":                     {"200": "The message_id was already stored; the stored message is returned (only id and message_id to a caller who may not read it)"},
}

func successResponse(set *schemaSet, op Operation, out any) obj {
	r := resources[op.Schema]
	jsonOf := func(v any) obj {
		if out != nil {
			v = out
		}
		if v == nil {
			return obj{"application/json": obj{"schema": obj{"type": "object"}}}
		}
		return obj{"application/json": obj{"schema": set.ref(v)}}
	}
	var content obj
	switch op.Body {
	case bPage:
		content = jsonOf(r.page)
	case bList:
		content = jsonOf(r.list)
	case bRecord:
		content = jsonOf(r.record)
	case bDeleted:
		content = jsonOf(envelope.Deleted{})
	case bRaw:
		content = jsonOf(nil)
	case bCSV:
		content = obj{"text/csv": obj{"schema": obj{"type": "string"}}}
	case bPDF:
		content = obj{"application/pdf": obj{"schema": obj{"type": "string", "contentMediaType": "application/pdf"}}}
	case bDOCX:
		const docx = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
		content = obj{docx: obj{"schema": obj{"type": "string", "contentMediaType": docx}}}
	}
	desc := "Success"
	if op.Success == 201 {
		desc = "Created"
	}
	resp := obj{"description": desc, "headers": rateHeaders()}
	if op.Success == 201 {
		resp["headers"].(obj)["Location"] = headerRef("Location")
	}
	if content != nil {
		resp["content"] = content
	}
	return resp
}

// addExamples gives each JSON request and response media type of an
// operation an example built from its schema.
func addExamples(o obj, schemas obj) {
	media := func(content any, request bool) {
		c, _ := content.(obj)
		for typ, m := range c {
			mt := m.(obj)
			if typ != "application/json" || mt["example"] != nil {
				continue
			}
			sch := mt["schema"]
			if one, ok := sch.(obj)["anyOf"].([]obj); ok {
				sch = one[0]
			}
			mt["example"] = example(toJSON(sch), schemas, 0, request)
		}
	}
	if rb, ok := o["requestBody"].(obj); ok {
		media(rb["content"], true)
	}
	for _, r := range o["responses"].(obj) {
		if rm, ok := r.(obj); ok {
			media(rm["content"], false)
		}
	}
}

// toJSON turns a Go value built here ([]obj, []string) into the generic
// JSON shapes example reads.
func toJSON(v any) any {
	b, _ := json.Marshal(v)
	var out any
	_ = json.Unmarshal(b, &out)
	return out
}

// errorCodes lists the problem responses an operation can produce.
func errorCodes(op Operation) []string {
	codes := []string{"429", "500", "502", "503", "504"}
	if op.Auth != Public {
		codes = append(codes, "401")
	}
	if op.Auth != Public {
		// Admin routes, records of other users, API keys refusing an origin.
		codes = append(codes, "403")
	}
	if strings.Contains(op.Path, "{") {
		codes = append(codes, "404")
	}
	if op.Request != bNone {
		codes = append(codes, "400", "408", "413", "415", "422")
	}
	if op.Method == "GET" && len(op.Query) > 0 {
		codes = append(codes, "400", "422")
	}
	slices.Sort(codes)
	return slices.Compact(codes)
}

// problemCodes explains each status's problem codes; /docs/problems
// renders them too.
var problemCodes = map[string]string{
	"400": "malformed_json or bad_request",
	"401": "unauthenticated: missing, bad or expired credential (WWW-Authenticate set)",
	"403": "forbidden: the admin role is required, the record is outside the caller's edit scope, or the API key does not allow the origin; insufficient_scope: the integration token lacks the operation's scope (WWW-Authenticate names it)",
	"404": "not_found",
	"409": "conflict, invalid_transition, already_qualified, qualification_in_progress, stage_in_use, template_in_use, idempotency_key_reused or request_in_progress",
	"413": "payload_too_large",
	"415": "unsupported_media_type (also any Content-Encoding other than identity)",
	"422": "validation_failed with errors[].field",
	"429": "rate_limited (Retry-After and RateLimit-* headers)",
	"408": "request_timeout: the body did not arrive in time",
	"500": "internal: a fault of the server, logged with the request id",
	"502": "upstream_unavailable",
	"503": "upstream_unavailable (Retry-After)",
	"504": "upstream_timeout",
}

func problemResponses(problem obj) obj {
	out := obj{}
	for code, d := range problemCodes {
		headers := obj{"X-Request-Id": headerRef("X-Request-Id")}
		if code == "429" || code == "503" {
			headers["Retry-After"] = headerRef("Retry-After")
		}
		if code == "429" {
			headers["RateLimit-Limit"] = headerRef("RateLimit-Limit")
			headers["RateLimit-Remaining"] = headerRef("RateLimit-Remaining")
			headers["RateLimit-Reset"] = headerRef("RateLimit-Reset")
		}
		out[code] = obj{"description": d, "headers": headers,
			"content": obj{"application/problem+json": obj{"schema": problem}}}
	}
	return out
}

func pathParams(p string) []string {
	var out []string
	for _, s := range strings.Split(p, "/") {
		if strings.HasPrefix(s, "{") && strings.HasSuffix(s, "}") {
			out = append(out, s[1:len(s)-1])
		}
	}
	return out
}

func operationID(op Operation) string {
	var b strings.Builder
	b.WriteString(strings.ToLower(op.Method))
	for _, s := range strings.Split(op.Path, "/") {
		s = strings.Trim(s, "{}")
		for _, part := range strings.FieldsFunc(s, func(r rune) bool { return r == '-' || r == '_' }) {
			b.WriteString(strings.ToUpper(part[:1]) + part[1:])
		}
	}
	return b.String()
}
