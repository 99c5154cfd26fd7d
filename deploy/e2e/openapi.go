package e2e

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Contract checks real exchanges against the gateway's OpenAPI document:
// every path and method a test called must be documented, with the status
// code it answered among the operation's documented responses, the
// answer's content type among that response's media types and its body
// valid against the response's schema (JSON Schema 2020-12) with no
// property the document does not list. A JSON request body the service
// accepted must be valid against the operation's request schema, every
// query parameter must be documented, and a 201 must carry Location.
type Contract struct {
	ops map[string]map[string]*contractOp // template → method → operation

	mu       sync.Mutex
	problems map[string]bool
	seen     int
}

// contractOp is one documented operation, its schemas compiled.
type contractOp struct {
	query     map[string]bool               // documented query parameters
	request   *jsonschema.Schema            // application/json request body, nil for none
	responses map[string]map[string]*schema // status → media type → schema (nil schema: not JSON)
}

type schema struct{ s *jsonschema.Schema }

// LoadContract fetches {gateway}/openapi.json, whose paths are relative to
// the /api prefix.
func LoadContract(gatewayURL string) (*Contract, error) {
	resp, err := http.Get(gatewayURL + "/openapi.json")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	raw, err := jsonschema.UnmarshalJSON(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("openapi.json: %w", err)
	}
	return NewContract(raw)
}

// NewContract compiles an OpenAPI document decoded by
// jsonschema.UnmarshalJSON.
func NewContract(raw any) (*Contract, error) {
	doc, _ := raw.(map[string]any)
	components, _ := doc["components"].(map[string]any)
	schemas, _ := components["schemas"].(map[string]any)
	responses, _ := components["responses"].(map[string]any)
	paths, _ := doc["paths"].(map[string]any)
	if schemas == nil || paths == nil {
		return nil, errors.New("openapi.json: no paths or components.schemas")
	}
	// Undocumented properties are mismatches: every object schema that
	// lists properties gets unevaluatedProperties false (the served
	// document itself stays open to additions).
	for _, s := range schemas {
		closeObjects(s)
	}
	// The schemas of operations are gathered under "x" of one resource
	// next to components, so their #/components refs resolve.
	inline := map[string]any{}
	resource := map[string]any{"components": map[string]any{"schemas": schemas}, "x": inline}
	type pending struct {
		op        *contractOp
		status    string
		media     string
		key       string
		isRequest bool
	}
	var todo []pending
	c := &Contract{ops: map[string]map[string]*contractOp{}, problems: map[string]bool{}}
	for p, item := range paths {
		c.ops[p] = map[string]*contractOp{}
		for m, o := range item.(map[string]any) {
			op := &contractOp{query: map[string]bool{}, responses: map[string]map[string]*schema{}}
			c.ops[p][strings.ToUpper(m)] = op
			om := o.(map[string]any)
			params, _ := om["parameters"].([]any)
			for _, prm := range params {
				pm, _ := prm.(map[string]any)
				if pm["in"] == "query" {
					name := fmt.Sprint(pm["name"])
					if pm["style"] == "deepObject" {
						name += "[" // documents name[key]... (see check)
					}
					op.query[name] = true
				}
			}
			if rb, ok := om["requestBody"].(map[string]any); ok {
				content, _ := rb["content"].(map[string]any)
				if mt, ok := content["application/json"].(map[string]any); ok {
					key := strconv.Itoa(len(inline))
					inline[key] = closeObjects(mt["schema"])
					todo = append(todo, pending{op: op, key: key, isRequest: true})
				}
			}
			rs, _ := om["responses"].(map[string]any)
			for code, r := range rs {
				rm := r.(map[string]any)
				if ref, ok := rm["$ref"].(string); ok {
					rm, _ = responses[strings.TrimPrefix(ref, "#/components/responses/")].(map[string]any)
				}
				op.responses[code] = map[string]*schema{}
				content, _ := rm["content"].(map[string]any)
				for media, mt := range content {
					op.responses[code][media] = nil
					if !strings.Contains(media, "json") {
						continue
					}
					key := strconv.Itoa(len(inline))
					inline[key] = closeObjects(mt.(map[string]any)["schema"])
					todo = append(todo, pending{op: op, status: code, media: media, key: key})
				}
			}
		}
	}
	comp := jsonschema.NewCompiler()
	comp.DefaultDraft(jsonschema.Draft2020)
	comp.AssertFormat()
	if err := comp.AddResource("openapi.json", resource); err != nil {
		return nil, err
	}
	for _, t := range todo {
		s, err := comp.Compile("openapi.json#/x/" + t.key)
		if err != nil {
			return nil, fmt.Errorf("openapi.json: compile %s %s: %w", t.status, t.media, err)
		}
		if t.isRequest {
			t.op.request = s
		} else {
			t.op.responses[t.status][t.media] = &schema{s}
		}
	}
	return c, nil
}

// closeObjects adds unevaluatedProperties false to every object schema
// with properties, in place, and returns v. A custom_fields object
// (x-custom-fields) stays open: its members are the installation's
// definitions, which tests add while the run goes on.
func closeObjects(v any) any {
	switch t := v.(type) {
	case map[string]any:
		_, custom := t["x-custom-fields"]
		if _, ok := t["properties"]; ok && !custom {
			if _, set := t["additionalProperties"]; !set {
				t["unevaluatedProperties"] = false
			}
		}
		for _, c := range t {
			closeObjects(c)
		}
	case []any:
		for _, c := range t {
			closeObjects(c)
		}
	}
	return v
}

// Record is a Client.Record hook.
func (c *Contract) Record(method, path string, r *Response) {
	rel := strings.TrimPrefix(path, "/api")
	if method == http.MethodHead || strings.HasPrefix(rel, "/internal") || r.Status == http.StatusTooManyRequests {
		return
	}
	tmpl, ok := c.match(rel)
	var found []string
	report := func(format string, args ...any) { found = append(found, fmt.Sprintf(format, args...)) }
	switch {
	case !ok:
		report("%s %s: path not documented", method, rel)
	case c.ops[tmpl][method] == nil:
		report("%s %s: method not documented", method, tmpl)
	default:
		c.check(c.ops[tmpl][method], method+" "+tmpl, r, report)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seen++
	for _, p := range found {
		c.problems[p] = true
	}
}

// check compares one exchange with its operation.
func (c *Contract) check(op *contractOp, name string, r *Response, report func(string, ...any)) {
	status := strconv.Itoa(r.Status)
	media, ok := op.responses[status]
	if !ok {
		media, ok = op.responses["default"]
	}
	if !ok {
		report("%s: status %d not documented", name, r.Status)
		return
	}
	for q := range r.RequestQuery {
		family, _, deep := strings.Cut(q, "[")
		if !op.query[q] && !(deep && op.query[family+"["]) {
			report("%s: query parameter %q not documented", name, q)
		}
	}
	if op.request != nil && r.RequestJSON != nil && r.Status < 300 {
		if err := op.request.Validate(r.RequestJSON); err != nil {
			report("%s: the service accepted (%d) a request body the document refuses: %s", name, r.Status, oneLine(err))
		}
	}
	if r.Status == http.StatusCreated && r.Header.Get("Location") == "" {
		report("%s: 201 without Location", name)
	}
	ct := r.Header.Get("Content-Type")
	if len(media) == 0 {
		if len(r.Body) > 0 {
			report("%s: %d has a %q body the document does not describe", name, r.Status, ct)
		}
		return
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		report("%s: %d with unparsable Content-Type %q", name, r.Status, ct)
		return
	}
	s, ok := media[mt]
	if !ok {
		report("%s: %d answered %s, documented %s", name, r.Status, mt, strings.Join(keys(media), ", "))
		return
	}
	if s == nil {
		return
	}
	body, err := jsonschema.UnmarshalJSON(bytes.NewReader(r.Body))
	if err != nil {
		report("%s: %d body is not JSON: %v", name, r.Status, err)
		return
	}
	if err := s.s.Validate(body); err != nil {
		report("%s: %d body does not match the document: %s", name, r.Status, oneLine(err))
	}
}

func oneLine(err error) string {
	var ve *jsonschema.ValidationError
	if errors.As(err, &ve) {
		b, _ := json.Marshal(ve.BasicOutput())
		return string(b)
	}
	return strings.ReplaceAll(err.Error(), "\n", " ")
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// match finds the documented template for a concrete path ({id} segments).
func (c *Contract) match(path string) (string, bool) {
	segs := strings.Split(strings.Trim(path, "/"), "/")
	best, bestLiterals := "", -1
	for tmpl := range c.ops {
		ts := strings.Split(strings.Trim(tmpl, "/"), "/")
		if len(ts) != len(segs) {
			continue
		}
		literals, ok := 0, true
		for i, t := range ts {
			switch {
			case strings.HasPrefix(t, "{") && strings.HasSuffix(t, "}"):
			case t == segs[i]:
				literals++
			default:
				ok = false
			}
			if !ok {
				break
			}
		}
		if ok && literals > bestLiterals {
			best, bestLiterals = tmpl, literals
		}
	}
	return best, bestLiterals >= 0
}

// Problems lists every mismatch seen, sorted.
func (c *Contract) Problems() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]string, 0, len(c.problems))
	for p := range c.problems {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// Seen is how many exchanges were checked.
func (c *Contract) Seen() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.seen
}

// ValidateRequest checks a JSON request body against the request schema
// of the documented operation method+template.
func (c *Contract) ValidateRequest(method, template string, body any) error {
	op := c.ops[template][method]
	if op == nil || op.request == nil {
		return fmt.Errorf("%s %s: no documented JSON request body", method, template)
	}
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		return err
	}
	return op.request.Validate(v)
}
