package gateway

import (
	"encoding/json"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/opencrm/crm/pkg/contract/envelope"
	"github.com/opencrm/crm/pkg/contract/propertyapi"
	"github.com/opencrm/crm/pkg/contract/route"
)

type obj = map[string]any

// OpenAPI builds the OpenAPI 3.1 document of the public API: the paths
// from the routes' declarations (Routes), every schema reflected from the Go wire types of
// pkg/contract (never typed by hand), so the document says what the
// services encode.
func OpenAPI() (obj, error) { return openAPI(Routes()) }

// openAPI is the document of routes (a test's own table too).
func openAPI(routes []route.Route) (obj, error) {
	set := newSchemaSet()
	problemRef := set.ref(envelope.Problem{})
	paths := obj{}
	tagObjs := []obj{}
	seen := map[string]bool{}
	for _, op := range routes {
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
	hooks := webhookItems(set)
	schemas, err := set.components()
	if err != nil {
		return nil, err
	}
	typeEvents(schemas)
	responses := problemResponses(problemRef)
	// Examples are built once the schemas are known.
	headers := headerComponents()
	for _, op := range routes {
		o := paths[op.Path].(obj)[strings.ToLower(op.Method)].(obj)
		addExamples(op, o, schemas)
		if op.Deprecated != nil {
			deprecationHeaders(o, responses)
			deprecationHeaderComponents(headers)
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
			// LICENSE at the repository's root (TestOpenAPILicense).
			"license": obj{"name": "Apache License 2.0", "identifier": "Apache-2.0"},
			"contact": obj{"name": "OpenCRM maintainers", "url": "https://github.com/opencrm/crm"},
		},
		"servers":  []obj{{"url": route.Prefix, "description": "This gateway"}},
		"tags":     tagObjs,
		"paths":    paths,
		"webhooks": hooks,
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
			"headers":   headers,
		},
	}, nil
}

// authDescription says who may call an operation.
func authDescription(r route.Route) string {
	switch r.Auth {
	case route.Public:
		return "No credential needed."
	case route.JWT:
		return "Needs a bearer access token."
	case route.Admin:
		if r.Resource != "" {
			return "Needs a bearer access token of a user with the admin role, or an integration token with the scope below."
		}
		return "Needs a bearer access token of a user with the admin role."
	case route.Key:
		return "Needs an API key in X-API-Key; bearer tokens are refused."
	}
	return ""
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
	propertyapi.Tag: "Each installation's own fields of contacts, companies, leads and deals (admin only; integration tokens need scope admin). " +
		"Records carry them in custom_fields; lists filter and sort by them (cf[name]=...); this document types them with the current definitions.",
	"History": "Who changed what, when and how: each record's field-level history is under the record (GET /contacts/{id}/history...); " +
		"this route answers for any record, deleted ones too (admin; integration tokens need scope admin).",
	"Audit log": "The append-only, hash-chained log of logins, session revocations, access changes, keys and tokens, exports, imports, " +
		"deletes and definition changes of every context (admin; integration tokens need scope admin).",
	"Privacy": "A person's rights over their data (GDPR Art. 15, 17 and 20): export everything every context holds about an e-mail address, " +
		"or erase it everywhere, each as a job identity runs across the contexts (admin; integration tokens need scope admin). " +
		"An erasure's receipt says per context what was erased, redacted, or kept and why.",
	"Webhooks": "Subscriptions that push every change to an integration's URL, signed (Standard Webhooks), retried for 3 days; " +
		"their delivery log; and the events feed to catch up without a receiver. The bodies are listed under Webhooks. " +
		"A person needs the admin role; an integration token needs webhooks:read or webhooks:write.",
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

// deprecationHeaderComponents are the headers of a deprecated operation's
// answers (deprecationHeaders), declared only when one is: an unused
// component is a lint warning.
func deprecationHeaderComponents(h obj) {
	h["Deprecation"] = obj{"description": "The operation is deprecated (RFC 9745): `@` and the Unix time of the day it was deprecated. " +
		"See the operation's description for when it may be removed and what replaces it.",
		"schema": obj{"type": "string", "pattern": "^@[0-9]+$", "examples": []string{"@1796083200"}}}
	h["Sunset"] = obj{"description": "The operation may be removed from this date on (RFC 8594), an HTTP-date; the operation's x-sunset is the same day.",
		"schema": obj{"type": "string", "examples": []string{"Tue, 01 Jun 2027 00:00:00 GMT"}}}
	h["DeprecationLink"] = obj{"description": "`</docs>; rel=\"deprecation\"; type=\"text/html\"`: the documentation of the deprecation (RFC 9745).",
		"schema": obj{"type": "string"}}
}

// deprecationNote is what the description of a deprecated operation or
// parameter says: since when, until when, and what replaces it.
func deprecationNote(d *route.Deprecation) string {
	note := "Deprecated since " + d.Since.Format(time.DateOnly) + "; it may be removed from " +
		d.Sunset.Format(time.DateOnly) + " on (x-sunset)."
	if d.Replacement != "" {
		note += " Use instead: " + d.Replacement + "."
	}
	return note
}

// deprecateObject marks an operation or parameter object deprecated with
// its sunset (the gate, gateway/tools/apicompat, reads x-sunset) and adds
// deprecationNote to its description.
func deprecateObject(o obj, d *route.Deprecation) {
	o["deprecated"] = true
	o["x-sunset"] = d.Sunset.Format(time.DateOnly)
	if desc, _ := o["description"].(string); desc != "" {
		o["description"] = desc + "\n\n" + deprecationNote(d)
	} else {
		o["description"] = deprecationNote(d)
	}
}

// deprecationHeaders declares the headers every answer of a deprecated
// operation carries (deprecationHeaderValues). A problem answer is
// written out in place of its $ref to components: a reference can add no
// headers.
func deprecationHeaders(o obj, components obj) {
	resp := o["responses"].(obj)
	for status, r := range resp {
		rm := r.(obj)
		if ref, ok := rm["$ref"].(string); ok {
			shared := components[strings.TrimPrefix(ref, "#/components/responses/")].(obj)
			rm = maps.Clone(shared)
			rm["headers"] = maps.Clone(shared["headers"].(obj))
			resp[status] = rm
		}
		h, _ := rm["headers"].(obj)
		if h == nil {
			h = obj{}
			rm["headers"] = h
		}
		h["Deprecation"] = headerRef("Deprecation")
		h["Sunset"] = headerRef("Sunset")
		if _, ok := h["Link"]; !ok {
			// A download's Link (help) is one more value of the same
			// header, documented there.
			h["Link"] = headerRef("DeprecationLink")
		}
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
func operationObject(set *schemaSet, op route.Route) obj {
	o := obj{
		"tags":        []string{op.Tag},
		"summary":     op.Summary,
		"operationId": operationID(op),
	}
	desc := op.Summary + ". " + authDescription(op)
	switch op.Auth {
	case route.Public:
		o["security"] = []obj{}
	case route.JWT, route.Admin:
		scopes := []string{}
		if s := op.Scope(); s != "" {
			scopes = append(scopes, s)
		}
		// The scope goes in x-scopes: OpenAPI lists scopes in a security
		// requirement for OAuth2 schemes only, and these tokens have no flow.
		o["security"] = []obj{{"bearerAuth": []string{}}, {"accessToken": []string{}}}
		o["x-scopes"] = scopes
		if op.Auth == route.Admin {
			o["x-admin"] = true
		}
		if len(scopes) > 0 {
			desc += " An integration token needs the " + scopes[0] + " scope."
		} else {
			desc += " Any integration token may call it."
		}
	case route.Key:
		o["security"] = []obj{{"apiKey": []string{}}}
	}
	if op.Description != "" {
		desc += "\n\n" + op.Description
	}
	o["description"] = desc
	if op.Deprecated != nil {
		deprecateObject(o, op.Deprecated)
	}
	var params []obj
	for _, name := range pathParams(op.Path) {
		params = append(params, obj{"name": name, "in": "path", "required": true,
			"description": "Record id.", "schema": obj{"type": "integer", "minimum": 1}})
	}
	for _, q := range op.Query {
		params = append(params, queryParam(q))
	}
	if op.Auth == route.Key {
		params = append(params, obj{"name": "Idempotency-Key", "in": "header", "required": false,
			"description": "Replays the first answer for 24 h when the same key is sent again with the same body; 409 with another body.",
			"schema":      obj{"type": "string", "maxLength": 255}})
	}
	if len(params) > 0 {
		o["parameters"] = params
	}
	switch {
	case op.Accepts == route.Form:
		schema := obj{
			"type": "object", "required": []string{"file"},
			"properties": obj{"file": obj{"type": "string", "contentMediaType": "application/octet-stream", "description": "The file."}},
		}
		rb := obj{"required": true}
		if op.Request != nil {
			schema = set.ref(op.Request)
		}
		if _, ok := op.Request.(envelope.ImportForm); ok {
			rb["description"] = envelope.ImportFormNote
		}
		rb["content"] = obj{"multipart/form-data": obj{"schema": schema}}
		o["requestBody"] = rb
	case op.Request != nil:
		o["requestBody"] = obj{"required": !op.OptionalBody, "content": obj{"application/json": obj{"schema": set.ref(op.Request)}}}
	}
	resp := obj{}
	resp[strconv.Itoa(op.SuccessStatus())] = successResponse(set, op)
	for _, code := range errorCodes(op) {
		resp[code] = obj{"$ref": "#/components/responses/" + code}
	}
	for _, code := range op.Problems {
		resp[strconv.Itoa(code)] = obj{"$ref": "#/components/responses/" + strconv.Itoa(code)}
	}
	for _, alt := range op.Alternatives {
		r := successResponse(set, op)
		r["description"] = alt.Description
		switch len(alt.Responses) {
		case 0:
		case 1:
			r["content"] = obj{"application/json": obj{"schema": set.ref(alt.Responses[0])}}
		default:
			var anyOf []obj
			for _, v := range alt.Responses {
				anyOf = append(anyOf, set.ref(v))
			}
			r["content"] = obj{"application/json": obj{"schema": obj{"anyOf": anyOf}}}
		}
		delete(r["headers"].(obj), "Location")
		resp[strconv.Itoa(alt.Status)] = r
	}
	if op.Link {
		resp["200"].(obj)["headers"].(obj)["Link"] = headerRef("Link")
	}
	o["responses"] = resp
	return o
}

// queryParam documents a list query parameter with its type, enum and
// bounds.
func queryParam(q route.Param) obj {
	s := obj{"type": q.Type}
	if q.Min != nil {
		s["minimum"] = *q.Min
	}
	if q.Max != nil {
		s["maximum"] = *q.Max
	}
	if q.MaxLength > 0 {
		s["maxLength"] = q.MaxLength
	}
	if q.Format != "" {
		s["format"] = q.Format
	}
	if q.Default != nil {
		s["default"] = q.Default
	}
	if len(q.Enum) > 0 {
		s["enum"] = q.Enum
	}
	p := obj{"name": q.Name, "in": "query", "required": q.Required, "schema": s}
	if q.Style != "" {
		s["additionalProperties"] = obj{"type": "string"}
		p["style"], p["explode"] = q.Style, true
	}
	if q.Desc != "" {
		p["description"] = q.Desc
	}
	if q.Deprecated != nil {
		deprecateObject(p, q.Deprecated)
	}
	return p
}

func successResponse(set *schemaSet, op route.Route) obj {
	var content obj
	switch op.Answers {
	case route.JSON:
		if op.Response != nil {
			content = obj{"application/json": obj{"schema": set.ref(op.Response)}}
		}
	case route.CSV:
		content = obj{"text/csv": obj{"schema": obj{"type": "string"}}}
	case route.PDF:
		content = obj{"application/pdf": obj{"schema": obj{"type": "string", "contentMediaType": "application/pdf"}}}
	case route.DOCX:
		const docx = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
		content = obj{docx: obj{"schema": obj{"type": "string", "contentMediaType": docx}}}
	}
	created := op.SuccessStatus() == http.StatusCreated
	desc := "Success"
	if created {
		desc = "Created"
	}
	resp := obj{"description": desc, "headers": rateHeaders()}
	if created {
		resp["headers"].(obj)["Location"] = headerRef("Location")
	}
	if content != nil {
		resp["content"] = content
	}
	return resp
}

// addExamples gives each JSON request and response media type of an
// operation an example built from its schema, a success answer with the
// message the service sends (successMessage), or none.
func addExamples(op route.Route, o obj, schemas obj) {
	media := func(content any, request bool, status string) {
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
			ex := example(toJSON(sch), schemas, 0, request)
			if m, ok := ex.(obj); ok && !request && strings.HasPrefix(status, "2") {
				if _, has := m["message"]; has {
					if msg := successMessage(op, status); msg != "" {
						m["message"] = msg
					} else {
						delete(m, "message")
					}
				}
			}
			mt["example"] = ex
		}
	}
	if rb, ok := o["requestBody"].(obj); ok {
		media(rb["content"], true, "")
	}
	for status, r := range o["responses"].(obj) {
		if rm, ok := r.(obj); ok {
			media(rm["content"], false, status)
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

// errorCodes lists the problem responses every operation of its kind can
// produce: the gateway's own (429 over a quota, 431 for an oversized
// request line and headers, 5xx from the service behind), the
// credential's, the path's and the body's.
func errorCodes(op route.Route) []string {
	codes := []string{"429", "431", "500", "502", "503", "504"}
	if op.Auth != route.Public {
		codes = append(codes, "401")
	}
	if op.Auth != route.Public {
		// Admin routes, records of other users, API keys refusing an origin.
		codes = append(codes, "403")
	}
	if strings.Contains(op.Path, "{") {
		codes = append(codes, "404")
	}
	if op.HasBody() {
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
	"401": "unauthenticated: missing, bad or expired credential (WWW-Authenticate set); on login a wrong email or password or a deactivated account, on refresh an invalid, spent or expired refresh token",
	"403": "forbidden: the admin role is required, the record is outside the caller's edit scope, or the API key does not allow the origin; insufficient_scope: the integration token lacks the operation's scope (WWW-Authenticate names it)",
	"404": "not_found",
	"409": "conflict, invalid_transition, already_qualified, qualification_in_progress, qualification_pending, stage_in_use, template_in_use, idempotency_key_reused or request_in_progress",
	"413": "payload_too_large",
	"415": "unsupported_media_type (also any Content-Encoding other than identity)",
	"422": "validation_failed with errors[].field; document_too_long when a PDF cannot be rendered",
	"429": "rate_limited (Retry-After and RateLimit-* headers)",
	"431": "request_header_fields_too_large: the request line (the query included) and header fields together exceed the gateway's limit",
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
func operationID(op route.Route) string {
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

// successMessage is the message the answer of op with status carries, or
// "" for none: the declaration's, which is what the service answers with.
func successMessage(op route.Route, status string) string {
	if status == strconv.Itoa(op.SuccessStatus()) {
		return op.Message
	}
	for _, alt := range op.Alternatives {
		if status == strconv.Itoa(alt.Status) {
			return alt.Message
		}
	}
	return ""
}
