package gateway

import (
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/opencrm/crm/pkg/auth"
	"github.com/opencrm/crm/pkg/contract/envelope"
	"github.com/opencrm/crm/pkg/contract/internalapi"
	"github.com/opencrm/crm/pkg/contract/route"
)

// InternalOpenAPI builds one OpenAPI 3.1 document per context that serves
// an internal API, by context name: the routes other contexts call with
// the cluster secret (internalapi.Routes), typed with the same schema
// generator as the public document. Nothing serves them; they exist to
// be released (api/released/internal/<ctx>.json) and compared with by the
// breaking-change gate, because a context may run one release behind its
// callers (docs/releasing.md).
func InternalOpenAPI() (map[string]obj, error) {
	out := map[string]obj{}
	for _, service := range internalapi.Services() {
		doc, err := internalDocument(service, internalapi.Of(service))
		if err != nil {
			return nil, fmt.Errorf("internal document of %s: %w", service, err)
		}
		out[service] = doc
	}
	return out, nil
}

// internalDocument is the document of service's internal routes.
func internalDocument(service string, routes []route.Internal) (obj, error) {
	if err := distinctSchemaNames(routes); err != nil {
		return nil, err
	}
	set := newSchemaSet()
	problemRef := set.ref(envelope.Problem{})
	paths := obj{}
	for _, r := range routes {
		item, _ := paths[r.Path].(obj)
		if item == nil {
			item = obj{}
			paths[r.Path] = item
		}
		method := strings.ToLower(r.Method)
		if item[method] != nil {
			return nil, fmt.Errorf("%s is declared twice", r.Pattern())
		}
		item[method] = internalOperation(set, service, r)
	}
	schemas, err := set.components()
	if err != nil {
		return nil, err
	}
	return obj{
		"openapi": "3.1.0",
		"info": obj{
			"title":   "OpenCRM " + service + " internal API",
			"version": "1.0.0",
			"summary": "The routes other OpenCRM contexts call on " + service + ".",
			"description": "Served by the " + service + " service under /internal/, to the other contexts of the " +
				"cluster only (the gateway never proxies it), each call carrying the cluster secret in " +
				auth.InternalHeader + ". Generated from the route declarations of pkg/contract; the released " +
				"document is api/released/internal/" + service + ".json, and it changes additively only " +
				"(docs/releasing.md): a context may run one release behind the contexts that call it. " +
				"Errors are RFC 9457 application/problem+json with a stable code.",
			"license": obj{"name": "Apache License 2.0", "identifier": "Apache-2.0"},
		},
		"security": []obj{{"internalToken": []string{}}},
		"paths":    paths,
		"components": obj{
			"securitySchemes": obj{
				"internalToken": obj{"type": "apiKey", "in": "header", "name": auth.InternalHeader,
					"description": "The cluster's internal secret (CRM_INTERNAL_SECRET), shared by every context."},
			},
			"schemas":   schemas,
			"responses": internalProblemResponses(problemRef),
		},
	}, nil
}

// internalOperation documents one internal route.
func internalOperation(set *schemaSet, service string, r route.Internal) obj {
	o := obj{
		"tags":        []string{service},
		"summary":     r.Summary,
		"operationId": operationID(route.Route{Method: r.Method, Path: r.Path}),
	}
	if r.Description != "" {
		o["description"] = r.Description
	}
	var params []obj
	for _, name := range pathParams(r.Path) {
		params = append(params, obj{"name": name, "in": "path", "required": true,
			"description": "Record id.", "schema": obj{"type": "integer", "minimum": 1}})
	}
	for _, q := range r.Query {
		params = append(params, queryParam(q))
	}
	if r.IdempotencyKey {
		params = append(params, obj{"name": "Idempotency-Key", "in": "header", "required": true,
			"description": "The same key with the same body answers the first answer again (Idempotent-Replayed: true); another body is a 409.",
			"schema":      obj{"type": "string", "maxLength": 255}})
	}
	if len(params) > 0 {
		o["parameters"] = params
	}
	if r.Request != nil {
		o["requestBody"] = obj{"required": true, "content": obj{"application/json": obj{"schema": set.ref(r.Request)}}}
	}
	success := obj{"description": "Success"}
	if r.SuccessStatus() == http.StatusCreated {
		success["description"] = "Created"
	}
	if r.IdempotencyKey {
		success["headers"] = obj{"Idempotent-Replayed": obj{"description": "true when the answer is the first one of the key, replayed.",
			"schema": obj{"type": "string", "enum": []string{"true"}}}}
	}
	if r.Response != nil {
		success["content"] = obj{"application/json": obj{"schema": set.ref(r.Response)}}
	}
	resp := obj{strconv.Itoa(r.SuccessStatus()): success}
	for _, code := range internalErrorCodes(r) {
		resp[code] = obj{"$ref": "#/components/responses/" + code}
	}
	o["responses"] = resp
	return o
}

// internalErrorCodes are the problem statuses of an internal route: the
// secret's 401, the path's 404, the body's and the query's refusals, the
// service's 5xx (and those of a context it asks in turn), and the route's
// own (a reused key's 409).
func internalErrorCodes(r route.Internal) []string {
	codes := []string{"401", "500", "502", "503", "504"}
	if strings.Contains(r.Path, "{") {
		codes = append(codes, "404")
	}
	if r.Request != nil {
		codes = append(codes, "400", "413", "415", "422")
	}
	if len(r.Query) > 0 || r.IdempotencyKey {
		codes = append(codes, "400", "422")
	}
	for _, p := range r.Problems {
		codes = append(codes, strconv.Itoa(p))
	}
	slices.Sort(codes)
	return slices.Compact(codes)
}

// internalProblems explains each status an internal route may answer.
var internalProblems = map[string]string{
	"400": "malformed_json or bad_request (a missing Idempotency-Key)",
	"401": "unauthenticated: the internal secret is missing or wrong",
	"404": "not_found",
	"409": "idempotency_key_reused (another body under the key) or request_in_progress",
	"413": "payload_too_large",
	"415": "unsupported_media_type",
	"422": "validation_failed with errors[].field",
	"500": "internal: a fault of the service, logged with the request id",
	"502": "upstream_unavailable: a context this one asks failed",
	"503": "upstream_unavailable: the service, or a context it asks, cannot answer now (Retry-After)",
	"504": "upstream_timeout: a context this one asks did not answer in time",
}

func internalProblemResponses(problem obj) obj {
	out := obj{}
	for code, d := range internalProblems {
		out[code] = obj{"description": d, "content": obj{"application/problem+json": obj{"schema": problem}}}
	}
	return out
}

// distinctSchemaNames refuses two request or response types of one
// document that the schema generator would give the same name (it names a
// schema after the Go type without package paths and brackets): one
// would silently replace the other.
func distinctSchemaNames(routes []route.Internal) error {
	names := map[string]reflect.Type{}
	for _, r := range routes {
		for _, v := range []any{r.Request, r.Response} {
			if v == nil {
				continue
			}
			t := reflect.TypeOf(v)
			name := defName(t, "")
			if prev, ok := names[name]; ok && prev != t {
				return fmt.Errorf("%s: %v and %v would both be the schema %s", r.Pattern(), prev, t, name)
			}
			names[name] = t
		}
	}
	return nil
}
