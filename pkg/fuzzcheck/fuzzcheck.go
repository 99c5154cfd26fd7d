// Package fuzzcheck holds what the services' fuzz targets of write
// endpoints assert and how they build inputs: any answer is a documented
// one (no 5xx, problem+json with a code its status may carry, RFC 3339
// timestamps), a refused write changes no row, and inputs are valid bodies
// with one field replaced. Test support only, like testdb.
package fuzzcheck

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/opencrm/crm/pkg/db"
	"github.com/opencrm/crm/pkg/problem"
)

// documentedCodes are the problem codes docs/api.md and the gateway's
// /docs/problems give each 4xx status a write endpoint may answer.
var documentedCodes = map[int][]string{
	400: {"malformed_json", "bad_request"},
	401: {"unauthenticated"},
	403: {"forbidden", "insufficient_scope"},
	404: {"not_found"},
	409: {"conflict", "invalid_transition", "already_qualified", "qualification_in_progress",
		"stage_in_use", "template_in_use", "idempotency_key_reused", "request_in_progress"},
	413: {"payload_too_large"},
	415: {"unsupported_media_type"},
	422: {"validation_failed"},
	429: {"rate_limited"},
}

// Answer fails on a 5xx, on a 4xx that is not problem+json with a
// documented code of its status (a 422 naming at least one field), and on
// a 2xx whose JSON holds a timestamp outside the documented format.
func Answer(t *testing.T, what string, status int, header http.Header, body []byte) {
	t.Helper()
	if status >= 500 {
		t.Fatalf("%s: status %d: %s", what, status, body)
	}
	if status < 400 {
		if bad := badTimestamp(body); bad != "" {
			t.Fatalf("%s: status %d answers the timestamp %q, not RFC 3339: %s", what, status, bad, body)
		}
		return
	}
	if ct := header.Get("Content-Type"); ct != problem.ContentType {
		t.Fatalf("%s: status %d with content type %q", what, status, ct)
	}
	var p problem.Body
	if err := json.Unmarshal(body, &p); err != nil {
		t.Fatalf("%s: problem %s: %v", what, body, err)
	}
	if p.Status != status || !slices.Contains(documentedCodes[status], p.Code) {
		t.Fatalf("%s: status %d with problem %s", what, status, body)
	}
	if status == http.StatusUnprocessableEntity && len(p.Errors) == 0 {
		t.Fatalf("%s: 422 names no field: %s", what, body)
	}
}

// badTimestamp returns the first timestamp of a JSON body (a string under
// a key ending in "_at", the API's naming) that does not parse as RFC 3339,
// such as a year beyond 9999 written with five digits; "" when none.
func badTimestamp(body []byte) string {
	var v any
	if json.Unmarshal(body, &v) != nil {
		return ""
	}
	var walk func(v any) string
	walk = func(v any) string {
		switch x := v.(type) {
		case []any:
			for _, e := range x {
				if bad := walk(e); bad != "" {
					return bad
				}
			}
		case map[string]any:
			for k, e := range x {
				if s, ok := e.(string); ok && strings.HasSuffix(k, "_at") {
					if _, err := time.Parse(time.RFC3339Nano, s); err != nil {
						return s
					}
				}
				if bad := walk(e); bad != "" {
					return bad
				}
			}
		}
		return ""
	}
	return walk(v)
}

// Snapshot fingerprints every table of the service's schema by its row
// count and newest row version (xmin): an insert, update or delete
// changes one of them, for the price of a scan of small tables.
func Snapshot(t *testing.T, d *db.DB) map[string]string {
	t.Helper()
	ctx := context.Background()
	rows, err := d.Query(ctx, `SELECT tablename FROM pg_tables WHERE schemaname = $1`, d.Schema)
	if err != nil {
		t.Fatal(err)
	}
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	out := make(map[string]string, len(tables))
	for _, name := range tables {
		var n, newest int64
		q := `SELECT count(*), coalesce(max(xmin::text::bigint), 0) FROM ` + pgx.Identifier{d.Schema, name}.Sanitize()
		if err := d.QueryRow(ctx, q).Scan(&n, &newest); err != nil {
			t.Fatal(err)
		}
		out[name] = fmt.Sprintf("%d rows, newest version %d", n, newest)
	}
	return out
}

// Splice returns base (a valid body) as JSON with one of fields (nil:
// base's own) set to raw: raw itself when it is a JSON value, else raw as
// a JSON string.
// Mutating one field of a body that is otherwise valid reaches the
// validation and the SQL behind it far more often than mutating bytes of
// the whole body, which mostly exercises the JSON decoder.
func Splice(base map[string]any, fields []string, field uint8, raw []byte) []byte {
	if fields == nil {
		fields = Fields(base)
	}
	m := make(map[string]any, len(base)+1)
	for k, v := range base {
		m[k] = v
	}
	if json.Valid(raw) {
		m[fields[int(field)%len(fields)]] = json.RawMessage(raw)
	} else {
		m[fields[int(field)%len(fields)]] = string(raw)
	}
	out, err := json.Marshal(m)
	if err != nil {
		panic(err) // every value is valid JSON by construction
	}
	return out
}

// Fields are m's keys in order, so a field number names the same
// field in every run.
func Fields(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// FieldSeed is the splice argument that sets field of valid (see
// Splice with nil fields).
func FieldSeed(valid map[string]any, field string) uint8 {
	i := slices.Index(Fields(valid), field)
	if i < 0 {
		panic("no field " + field)
	}
	return uint8(2*i + 1)
}

// WithUnique is base with field set to format filled with n: a valid body
// for an endpoint that refuses a second record with the same value (409),
// so that later inputs still reach the create path.
func WithUnique(base map[string]any, field, format string, n int) map[string]any {
	m := make(map[string]any, len(base))
	for k, v := range base {
		m[k] = v
	}
	m[field] = fmt.Sprintf(format, n)
	return m
}

// Serve sends body to h as a JSON request with a bearer token and returns
// the recorded answer: a fuzz target calls the handler directly, without a
// listener per input.
func Serve(h http.Handler, method, path, token string, body []byte) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, path, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}
