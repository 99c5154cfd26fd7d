package gateway

import (
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

// Param is a query parameter.
type Param struct {
	Name, Type, Desc string
}

var (
	pageParams = []Param{
		{"page", "integer", "page number, default 1"},
		{"per_page", "integer", "page size, default 25, max 100"},
		{"search", "string", "case-insensitive search term"},
		{"sort_dir", "string", "ASC (default) or DESC"},
	}
	contactQuery = append(append([]Param{}, pageParams...),
		Param{"status", "string", "active, inactive"}, Param{"company_id", "integer", ""},
		Param{"assigned_to", "integer", "user id"}, Param{"source", "string", ""},
		Param{"date_from", "string", "created_at from, YYYY-MM-DD"}, Param{"date_to", "string", "created_at to, YYYY-MM-DD"},
		Param{"scope", "string", "me, team, company"},
		Param{"sort_by", "string", "name (default), email, phone, company_name, status, created_at"})
	leadQuery = append(append([]Param{}, pageParams...),
		Param{"status", "string", "new, contacted, qualified, disqualified"}, Param{"source", "string", ""},
		Param{"assigned_to", "integer", "user id"},
		Param{"date_from", "string", "created_at from, YYYY-MM-DD"}, Param{"date_to", "string", "created_at to, YYYY-MM-DD"},
		Param{"scope", "string", "me, team, company"},
		Param{"sort_by", "string", "name (default), email, company_name, status, source, assigned_to_name, created_at"})
	contractQuery = append(append([]Param{}, pageParams...),
		Param{"status", "string", "one status or a comma-separated list"}, Param{"deal_id", "integer", ""},
		Param{"expiring_within", "integer", "days; active and executed contracts only"},
		Param{"sort_by", "string", "contract_number (default), name, company_name, deal_title, status, effective_date, termination_date, created_at"})
	simplePage = pageParams
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

// Operations is the public API (spec section 4, DESIGN 4 to 10).
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
	add(crud("Users", "/users", "User", "user", Admin, bList, nil)...)
	ops[len(ops)-1].Summary = "Deactivate a user (users stay referenced)"
	add(crud("Teams", "/teams", "Team", "team", Admin, bList, nil)...)
	add(
		Operation{"GET", "/api-keys", "API keys", "List API keys (without secrets)", Admin, "APIKey", bNone, 200, bList, nil},
		Operation{"POST", "/api-keys", "API keys", "Create an API key; the secret is returned once", Admin, "APIKey", bJSON, 201, bRecord, nil},
		Operation{"DELETE", "/api-keys/{id}", "API keys", "Revoke an API key (effective within 5 s)", Admin, "", bNone, 200, bDeleted, nil},
	)

	add(crud("Contacts", "/contacts", "Contact", "contact", JWT, bPage, contactQuery)...)
	add(activity("Contacts", "/contacts", "contact", true)...)
	add(
		Operation{"GET", "/contacts/{id}/linked-emails", "Contacts", "Synced emails linked to the contact, newest first", JWT, "Email", bNone, 200, bList, nil},
		Operation{"GET", "/contacts/export", "Contacts", "Export contacts as CSV (accepts the list filters)", Admin, "", bNone, 200, bCSV, contactQuery},
		Operation{"GET", "/contacts/template", "Contacts", "CSV import template (header line)", Admin, "", bNone, 200, bCSV, nil},
		Operation{"POST", "/contacts/import", "Contacts", "Import contacts from CSV (≤ 20 MB, 100,000 rows)", Admin, "ImportResult", bMultipart, 200, bRaw, nil},
	)
	add(crud("Companies", "/companies", "Company", "company", JWT, bPage, simplePage)...)
	ops[len(ops)-4].Summary = "Create a company"
	ops[len(ops)-1].Summary = "Delete a company (its contacts are unlinked)"

	add(crud("Leads", "/leads", "Lead", "lead", JWT, bPage, leadQuery)...)
	add(
		Operation{"POST", "/leads/{id}/qualify", "Leads", "Qualify a lead into a contact, optionally a company and a deal", JWT, "Qualify", bJSON, 200, bRaw, nil},
		Operation{"PUT", "/leads/{id}/disqualify", "Leads", "Disqualify a lead with an optional reason", JWT, "Lead", bJSON, 200, bRecord, nil},
	)
	add(activity("Leads", "/leads", "lead", true)...)
	add(
		Operation{"GET", "/leads/{id}/linked-emails", "Leads", "Synced emails linked to the lead, newest first", JWT, "Email", bNone, 200, bList, nil},
		Operation{"GET", "/leads/export", "Leads", "Export leads as CSV (accepts the list filters)", Admin, "", bNone, 200, bCSV, leadQuery},
		Operation{"GET", "/leads/template", "Leads", "CSV import template (header line)", Admin, "", bNone, 200, bCSV, nil},
		Operation{"GET", "/leads/match-company", "Leads", "Existing companies matching a company name", JWT, "Company", bNone, 200, bList, []Param{{"company", "string", "company name"}}},
		Operation{"GET", "/leads/match-contact", "Leads", "Existing contacts matching an email", JWT, "Contact", bNone, 200, bList, []Param{{"email", "string", "email address"}}},
		Operation{"POST", "/leads/import", "Leads", "Import leads from CSV (≤ 20 MB, 100,000 rows)", JWT, "ImportResult", bMultipart, 200, bRaw, nil},
	)

	add(
		Operation{"GET", "/deal-stages", "Deals", "List deal stages in order", JWT, "DealStage", bNone, 200, bList, nil},
		Operation{"GET", "/deal-stages/{id}", "Deals", "Get a deal stage", JWT, "DealStage", bNone, 200, bRecord, nil},
		Operation{"POST", "/deal-stages", "Deals", "Add a deal stage", Admin, "DealStage", bJSON, 201, bRecord, nil},
		Operation{"PUT", "/deal-stages/{id}", "Deals", "Rename or reorder a deal stage", Admin, "DealStage", bJSON, 200, bRecord, nil},
		Operation{"DELETE", "/deal-stages/{id}", "Deals", "Delete a deal stage", Admin, "", bNone, 200, bDeleted, nil},
	)
	add(crud("Deals", "/deals", "Deal", "deal", JWT, bPage, simplePage)...)
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
		Operation{"GET", "/intake/submissions", "Public API", "List public lead submissions", Admin, "Submission", bNone, 200, bPage, simplePage},
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
			{"contact_id", "integer", "read through this linked contact"}, {"lead_id", "integer", "read through this linked lead"},
		}},
	)
	return ops
}

type obj = map[string]any

func ref(name string) obj { return obj{"$ref": "#/components/schemas/" + name} }

// OpenAPI builds the OpenAPI 3.1 document of the public API.
func OpenAPI() obj {
	paths := obj{}
	tagObjs := []obj{}
	seen := map[string]bool{}
	for _, op := range Operations() {
		item, _ := paths[op.Path].(obj)
		if item == nil {
			item = obj{}
			paths[op.Path] = item
		}
		item[strings.ToLower(op.Method)] = operationObject(op)
		if !seen[op.Tag] {
			seen[op.Tag] = true
			tagObjs = append(tagObjs, obj{"name": op.Tag})
		}
	}
	return obj{
		"openapi": "3.1.0",
		"info": obj{
			"title":   "OpenCRM API",
			"version": "1.0.0",
			"description": "The CRM's public API. Every path is under /api. JSON in and out; errors are " +
				"RFC 9457 application/problem+json with a stable `code`. Timestamps are UTC with microseconds.",
		},
		"servers": []obj{{"url": "/api"}},
		"tags":    tagObjs,
		"paths":   paths,
		"components": obj{
			"securitySchemes": obj{
				"bearerAuth": obj{"type": "http", "scheme": "bearer", "bearerFormat": "JWT",
					"description": "Access token from POST /auth/login (EdDSA, 15 minutes)."},
				"apiKey": obj{"type": "apiKey", "in": "header", "name": "X-API-Key",
					"description": "API key created by an admin; only on /public routes, where bearer tokens are refused."},
			},
			"schemas":   schemas(),
			"responses": problemResponses(),
		},
	}
}

func operationObject(op Operation) obj {
	o := obj{
		"tags":        []string{op.Tag},
		"summary":     op.Summary,
		"operationId": operationID(op),
	}
	switch op.Auth {
	case Public:
		o["security"] = []obj{}
	case JWT:
		o["security"] = []obj{{"bearerAuth": []string{}}}
	case Admin:
		o["security"] = []obj{{"bearerAuth": []string{}}}
		o["description"] = "Requires the admin role."
		o["x-admin"] = true
	case Key:
		o["security"] = []obj{{"apiKey": []string{}}}
	}
	var params []obj
	for _, name := range pathParams(op.Path) {
		params = append(params, obj{"name": name, "in": "path", "required": true, "schema": obj{"type": "integer", "minimum": 1}})
	}
	for _, q := range op.Query {
		p := obj{"name": q.Name, "in": "query", "required": false, "schema": obj{"type": q.Type}}
		if q.Desc != "" {
			p["description"] = q.Desc
		}
		params = append(params, p)
	}
	if op.Auth == Key {
		params = append(params, obj{"name": "Idempotency-Key", "in": "header", "required": false, "schema": obj{"type": "string"}})
	}
	if len(params) > 0 {
		o["parameters"] = params
	}
	switch op.Request {
	case bJSON:
		schema := obj{"type": "object"}
		if op.Schema != "" {
			schema = ref(op.Schema)
		}
		o["requestBody"] = obj{"required": true, "content": obj{"application/json": obj{"schema": schema}}}
	case bMultipart:
		o["requestBody"] = obj{"required": false, "content": obj{"multipart/form-data": obj{"schema": obj{
			"type": "object", "properties": obj{"file": obj{"type": "string", "contentMediaType": "application/octet-stream"}},
		}}}}
	}
	resp := obj{}
	resp[strconv.Itoa(op.Success)] = successResponse(op)
	for _, code := range errorCodes(op) {
		resp[code] = obj{"$ref": "#/components/responses/" + code}
	}
	for code, desc := range extraResponses[op.Method+" "+op.Path] {
		if strings.HasPrefix(code, "2") {
			resp[code] = obj{"description": desc}
			continue
		}
		resp[code] = obj{"$ref": "#/components/responses/" + code}
	}
	o["responses"] = resp
	return o
}

// extraResponses are the answers an operation gives besides its success
// and the generic error codes: state conflicts and alternative successes.
var extraResponses = map[string]map[string]string{
	"POST /leads/{id}/qualify":        {"409": ""},
	"POST /public/leads":              {"202": "Accepted and stored; the lead is created when the leads service is back (data.id null, data.submission_id set)", "409": ""},
	"PUT /contracts/{id}":             {"409": ""},
	"PUT /contracts/{id}/regenerate":  {"409": ""},
	"POST /contracts/{id}/executed":   {"409": ""},
	"DELETE /contracts/{id}":          {"409": ""},
	"DELETE /contract-templates/{id}": {"409": ""},
	"DELETE /deal-stages/{id}":        {"409": ""},
	"PUT /deal-stages/{id}":           {"409": ""},
	"POST /users":                     {"409": ""},
	"PUT /users/{id}":                 {"409": ""},
	"DELETE /users/{id}":              {"409": ""},
	"POST /teams":                     {"409": ""},
	"PUT /teams/{id}":                 {"409": ""},
	"POST /emails":                    {"200": "The message_id was already stored; the stored message is returned (only id and message_id to a caller who may not read it)"},
}

func successResponse(op Operation) obj {
	item := obj{"type": "object"}
	if op.Schema != "" {
		item = ref(op.Schema)
	}
	var content obj
	switch op.Body {
	case bPage:
		content = obj{"application/json": obj{"schema": obj{"allOf": []obj{ref("Page"), {
			"type": "object", "properties": obj{"data": obj{"type": "array", "items": item}}}}}}}
	case bList:
		content = obj{"application/json": obj{"schema": obj{"type": "object", "properties": obj{
			"success": obj{"type": "boolean"}, "data": obj{"type": "array", "items": item}}}}}
	case bRecord:
		content = obj{"application/json": obj{"schema": obj{"type": "object", "properties": obj{
			"success": obj{"type": "boolean"}, "data": item, "message": obj{"type": "string"}}}}}
	case bDeleted:
		content = obj{"application/json": obj{"schema": ref("Deleted")}}
	case bRaw:
		content = obj{"application/json": obj{"schema": item}}
	case bCSV:
		content = obj{"text/csv": obj{"schema": obj{"type": "string"}}}
	case bPDF:
		content = obj{"application/pdf": obj{"schema": obj{"type": "string", "contentMediaType": "application/pdf"}}}
	case bDOCX:
		const docx = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
		content = obj{docx: obj{"schema": obj{"type": "string", "contentMediaType": docx}}}
	}
	r := obj{"description": "Success"}
	if content != nil {
		r["content"] = content
	}
	return r
}

// errorCodes lists the problem responses an operation can produce.
func errorCodes(op Operation) []string {
	codes := []string{"429", "502", "503", "504"}
	if op.Auth != Public {
		codes = append(codes, "401")
	}
	if op.Auth == Admin || (op.Auth == JWT && op.Method != "GET" && strings.Contains(op.Path, "{")) {
		// A write to one record outside the caller's edit scope is 403.
		codes = append(codes, "403")
	}
	if strings.Contains(op.Path, "{") {
		codes = append(codes, "404")
	}
	if op.Request != bNone {
		codes = append(codes, "400", "413", "415", "422")
	}
	if op.Method == "GET" && len(op.Query) > 0 {
		codes = append(codes, "422")
	}
	slices.Sort(codes)
	return slices.Compact(codes)
}

func problemResponses() obj {
	desc := map[string]string{
		"400": "malformed_json or invalid_query", "401": "unauthenticated: missing, bad or expired credential (WWW-Authenticate set)",
		"403": "forbidden: the admin role is required, or the record is outside the caller's edit scope", "404": "not_found",
		"409": "conflict, invalid_transition, already_qualified or template_in_use",
		"413": "payload_too_large", "415": "unsupported_media_type (also any Content-Encoding other than identity)",
		"422": "validation_failed with errors[].field", "429": "rate_limited (Retry-After and RateLimit-* headers)",
		"502": "upstream_unavailable", "503": "upstream_unavailable (Retry-After)", "504": "upstream_timeout",
	}
	out := obj{}
	for code, d := range desc {
		out[code] = obj{"description": d, "content": obj{"application/problem+json": obj{"schema": ref("Problem")}}}
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

func str(desc string) obj { return obj{"type": "string", "description": desc} }

func props(required []string, p obj) obj {
	o := obj{"type": "object", "properties": p}
	if len(required) > 0 {
		o["required"] = required
	}
	return o
}

var (
	tInt  = obj{"type": "integer"}
	tStr  = obj{"type": "string"}
	tBool = obj{"type": "boolean"}
	tTime = obj{"type": "string", "format": "date-time", "readOnly": true}
	tDate = obj{"type": "string", "format": "date"}
	tNInt = obj{"type": []string{"integer", "null"}}
	tRO   = obj{"type": "integer", "readOnly": true}
)

func schemas() obj {
	addr := func(p obj) obj {
		for _, k := range []string{"address_street", "address_city", "address_state", "address_zip", "address_country"} {
			p[k] = tStr
		}
		return p
	}
	task := props([]string{"title"}, obj{
		"id": tRO, "title": tStr, "description": tStr, "due_date": tDate, "due_time": tStr,
		"priority":    obj{"type": "string", "enum": []string{"low", "medium", "high"}},
		"assigned_to": tNInt, "contact_id": tNInt, "company_id": tNInt, "deal_id": tNInt,
		"status":       obj{"type": "string", "enum": []string{"open", "completed"}},
		"completed_at": tTime, "created_by": tRO, "created_at": tTime, "updated_at": tTime,
	})
	return obj{
		"Problem": props([]string{"type", "title", "status", "code"}, obj{
			"type": tStr, "title": tStr, "status": tInt, "detail": tStr, "code": tStr, "request_id": tStr,
			"errors": obj{"type": "array", "items": props([]string{"field", "message"}, obj{"field": tStr, "message": tStr})},
		}),
		"Page": props([]string{"data", "current_page", "last_page", "per_page", "total"}, obj{
			"data": obj{"type": "array"}, "current_page": tInt, "last_page": tInt, "per_page": tInt, "total": tInt,
		}),
		"Deleted": props(nil, obj{"success": tBool, "message": tStr}),
		"Login": props(nil, obj{
			"email": tStr, "password": obj{"type": "string", "writeOnly": true}, "refresh_token": tStr,
			"success": tBool, "data": props(nil, obj{"access_token": tStr, "token_type": tStr, "expires_in": tInt, "refresh_token": tStr, "user": ref("User")}),
		}),
		"JWKS": props([]string{"keys"}, obj{"keys": obj{"type": "array", "items": obj{"type": "object"}}}),
		"User": props([]string{"name", "email"}, obj{"id": tRO, "name": tStr, "email": tStr,
			"role": obj{"type": "string", "enum": []string{"admin", "user"}}, "team_id": tNInt, "active": tBool,
			"edit_scope": obj{"type": "string", "enum": []string{"company", "team", "own"}, "default": "company",
				"description": "what a non-admin may change: every record, records of their team or unassigned, or records assigned to or created by them"},
			"password": obj{"type": "string", "writeOnly": true, "minLength": 10}, "created_at": tTime, "updated_at": tTime}),
		"Team":   props([]string{"name"}, obj{"id": tRO, "name": tStr, "created_at": tTime, "updated_at": tTime}),
		"APIKey": props([]string{"name"}, obj{"id": tRO, "name": tStr, "prefix": tStr, "rate_limit_per_minute": tInt, "key": obj{"type": "string", "readOnly": true, "description": "returned once, on create"}, "created_at": tTime}),
		"Contact": props([]string{"first_name", "last_name"}, addr(obj{
			"id": tRO, "first_name": tStr, "last_name": tStr, "email": tStr, "phone": tStr, "mobile": tStr,
			"job_title": tStr, "company_id": tNInt, "company_name": obj{"type": "string", "readOnly": true},
			"notes": tStr, "tags": str("comma-separated"), "status": obj{"type": "string", "enum": []string{"active", "inactive"}},
			"source": tStr, "assigned_to": tNInt, "created_at": tTime, "updated_at": tTime,
		})),
		"Company": props([]string{"name"}, addr(obj{"id": tRO, "name": tStr, "domain": tStr, "website": tStr,
			"phone": tStr, "industry": tStr, "created_at": tTime, "updated_at": tTime})),
		"Lead": props([]string{"first_name", "last_name"}, obj{
			"id": tRO, "first_name": tStr, "last_name": tStr, "email": tStr, "phone": tStr, "company": tStr,
			"job_title": tStr, "source": tStr, "status": obj{"type": "string", "enum": []string{"new", "contacted", "qualified", "disqualified"}},
			"notes": tStr, "tags": tStr, "assigned_to": tNInt, "assigned_to_name": tStr, "disqualify_reason": tStr,
			"qualified_at": tTime, "contact_id": tNInt, "company_id": tNInt, "deal_id": tNInt, "reason": str("disqualify only"),
			"created_at": tTime, "updated_at": tTime,
		}),
		"Qualify": props(nil, obj{"create_company": tBool, "create_deal": tBool, "deal_name": tStr, "deal_value": obj{"type": "number"},
			"deal_stage_id": tInt, "contact_id": tNInt, "company_id": tNInt, "success": tBool}),
		"Note":         props([]string{"content"}, obj{"id": tRO, "content": tStr, "created_by": tRO, "created_at": tTime, "updated_at": tTime}),
		"Task":         task,
		"ImportResult": props(nil, obj{"success": tBool, "message": tStr, "imported": tInt, "skipped": tInt, "errors": obj{"type": "array", "items": tStr}}),
		"DealStage":    props([]string{"name"}, obj{"id": tRO, "name": tStr, "position": tInt}),
		"Deal": props([]string{"title"}, obj{"id": tRO, "title": tStr, "value": str("decimal, 2 places"), "currency": str("ISO 4217, default USD"),
			"stage_id": tInt, "stage_name": tStr, "status": obj{"type": "string", "enum": []string{"open", "won", "lost"}},
			"company_id": tNInt, "company_name": tStr, "contact_id": tNInt, "expected_close_date": tDate, "assigned_to": tNInt,
			"source_lead_id": tNInt, "created_at": tTime, "updated_at": tTime}),
		"Quote": props(nil, obj{"id": tRO, "deal_id": tInt, "quote_number": tStr,
			"status": obj{"type": "string", "enum": []string{"draft", "sent", "accepted", "declined"}}, "currency": tStr, "valid_until": tDate,
			"line_items": obj{"type": "array", "items": props(nil, obj{"description": tStr, "quantity": tStr, "unit_price": tStr})},
			"subtotal":   tStr, "tax_rate": str("percentage"), "tax": tStr, "total": tStr}),
		"Contract": props([]string{"deal_id", "template_id", "title"}, obj{
			"id": tRO, "contract_number": tStr, "title": tStr, "name": tStr, "deal_id": tInt, "deal_title": tStr,
			"company_id": tNInt, "company_name": tStr, "template_id": tInt, "template_name": tStr,
			"status":     obj{"type": "string", "enum": []string{"draft", "active", "executed", "expired", "terminated", "archived"}},
			"start_date": tDate, "end_date": tDate, "effective_date": tDate, "termination_date": tDate, "term_months": tInt,
			"auto_renew": tBool, "partner_ref": tStr, "content": str("resolved HTML"),
			"unresolved_tags": obj{"type": "array", "items": tStr}, "executed_file": obj{"type": []string{"object", "null"}},
			"created_by": tRO, "created_at": tTime, "updated_at": tTime,
		}),
		"ContractTemplate": props([]string{"name", "content"}, obj{
			"id": tRO, "name": tStr, "content": str("HTML with merge tags"), "number_prefix": tStr, "default_term_months": tInt,
			"header_left": tStr, "header_center": tStr, "header_right": tStr,
			"footer_left": tStr, "footer_center": tStr, "footer_right": tStr, "created_at": tTime, "updated_at": tTime,
		}),
		"MergeTags": props(nil, obj{"success": tBool, "data": obj{"type": "object", "description": "Licensee, Deal, Quote, Contract: [{tag,label,description,example}]"}}),
		"PublicLead": props([]string{"first_name", "last_name", "email"}, obj{
			"first_name": tStr, "last_name": tStr, "email": tStr, "phone": tStr, "company": tStr,
			"job_title": tStr, "source": tStr, "notes": tStr,
			"success": tBool, "data": props(nil, obj{"id": tNInt, "submission_id": tNInt}), "message": tStr,
		}),
		"Submission": obj{"type": "object"},
		"Mailbox": props([]string{"host", "username", "password"}, obj{"id": tRO, "owner_id": tRO, "host": tStr,
			"port": obj{"type": "integer"}, "tls": tBool, "username": tStr,
			"password": obj{"type": "string", "writeOnly": true}, "folder": tStr,
			"status":         obj{"type": "string", "readOnly": true, "enum": []string{"pending", "ok", "error"}},
			"last_error":     obj{"type": []string{"string", "null"}, "readOnly": true},
			"last_synced_at": obj{"type": []string{"string", "null"}, "format": "date-time", "readOnly": true}}),
		"Email": props([]string{"message_id"}, obj{"id": tRO, "message_id": tStr, "from": tStr,
			"to": obj{"type": "array", "items": tStr}, "cc": obj{"type": "array", "items": tStr}, "subject": tStr,
			"body_text": tStr, "sent_at": obj{"type": "string", "format": "date-time"},
			"direction": tStr}),
	}
}
