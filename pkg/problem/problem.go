// Package problem defines the platform's error categories and maps them to
// RFC 9457 application/problem+json in exactly one place (Write), so every
// service answers errors with the same shape and never leaks internals.
package problem

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"

	"github.com/opencrm/crm/pkg/fault"
)

// ContentType is the media type of every error body.
const ContentType = "application/problem+json"

// FieldError names one invalid input field (the cores' fault.Field).
type FieldError = fault.Field

// Error is a client-facing error. Domain code returns one (possibly wrapped
// with %w); Write renders it. Anything that is not an *Error is a 500.
type Error struct {
	Status int
	Code   string
	Title  string
	Detail string
	Errors []FieldError
	// Extra members are added to the body (e.g. existing ids on a conflict).
	Extra map[string]any
	// RetryAfter, in seconds, sets the Retry-After header when > 0.
	RetryAfter int
	// Header holds additional response headers (e.g. WWW-Authenticate).
	Header http.Header
	// Fault is the core's error this problem renders, when there is one,
	// so a core reading an error another context answered sees its kind.
	Fault *fault.Error
}

// Unwrap is the core's error this problem renders (nil when none).
func (e *Error) Unwrap() error {
	if e.Fault == nil {
		return nil
	}
	return e.Fault
}

func (e *Error) Error() string {
	if e.Detail != "" {
		return e.Code + ": " + e.Detail
	}
	return e.Code
}

// FaultCode returns the code, so errors.Is matches a problem and a core's
// fault of the same code either way round.
func (e *Error) FaultCode() string { return e.Code }

// Is makes errors.Is(err, problem.NotFound("")) style checks match on code.
func (e *Error) Is(target error) bool {
	var c fault.Coder
	if errors.As(target, &c) {
		return c.FaultCode() == e.Code
	}
	return false
}

// With returns a copy carrying an extra body member.
func (e *Error) With(key string, value any) *Error {
	c := *e
	c.Extra = map[string]any{}
	for k, v := range e.Extra {
		c.Extra[k] = v
	}
	c.Extra[key] = value
	return &c
}

func newErr(status int, code, detail string) *Error {
	return &Error{Status: status, Code: code, Title: http.StatusText(status), Detail: detail}
}

// BadRequest is a request the server cannot parse (400).
func BadRequest(code, detail string) *Error { return newErr(http.StatusBadRequest, code, detail) }

// MalformedJSON is a body that is not valid JSON (400).
func MalformedJSON(detail string) *Error { return BadRequest("malformed_json", detail) }

// Unauthenticated is a missing, bad or expired credential (401).
func Unauthenticated(detail string) *Error {
	e := newErr(http.StatusUnauthorized, "unauthenticated", detail)
	e.Header = http.Header{"Www-Authenticate": {`Bearer realm="crm"`}}
	return e
}

// Forbidden is an authenticated caller lacking a role (403).
func Forbidden(detail string) *Error { return newErr(http.StatusForbidden, "forbidden", detail) }

// NotFound says the named resource does not exist (or is not a child of the
// parent in the path).
func NotFound(resource string) *Error {
	d := "resource not found"
	if resource != "" {
		d = resource + " not found"
	}
	return newErr(http.StatusNotFound, "not_found", d)
}

// Conflict is a request that contradicts current state (409).
func Conflict(code, detail string) *Error {
	if code == "" {
		code = "conflict"
	}
	return newErr(http.StatusConflict, code, detail)
}

// TooLarge is a body over its limit (413).
func TooLarge(detail string) *Error {
	return newErr(http.StatusRequestEntityTooLarge, "payload_too_large", detail)
}

// UnsupportedMediaType is a body of the wrong type (415).
func UnsupportedMediaType(detail string) *Error {
	return newErr(http.StatusUnsupportedMediaType, "unsupported_media_type", detail)
}

// Validation is invalid input (422) with one entry per bad field.
func Validation(errs ...FieldError) *Error {
	e := newErr(http.StatusUnprocessableEntity, "validation_failed", "one or more fields are invalid")
	e.Errors = errs
	return e
}

// Invalid is a shorthand for a single-field validation error.
func Invalid(field, message string) *Error {
	return Validation(FieldError{Field: field, Message: message})
}

// RateLimited is a caller over its quota (429).
func RateLimited(retryAfter int) *Error {
	e := newErr(http.StatusTooManyRequests, "rate_limited", "too many requests, retry later")
	e.RetryAfter = retryAfter
	return e
}

// Unavailable is a dependency that cannot serve now (503).
func Unavailable(detail string, retryAfter int) *Error {
	e := newErr(http.StatusServiceUnavailable, "upstream_unavailable", detail)
	e.RetryAfter = retryAfter
	return e
}

// BadGateway is a dependency that answered wrongly or not at all (502).
func BadGateway(detail string) *Error {
	return newErr(http.StatusBadGateway, "upstream_unavailable", detail)
}

// Timeout is a dependency that did not answer in time (504).
func Timeout(detail string) *Error {
	return newErr(http.StatusGatewayTimeout, "upstream_timeout", detail)
}

// Internal is the only 500 body: it never carries the cause's text.
func Internal() *Error {
	return newErr(http.StatusInternalServerError, "internal", "an internal error occurred")
}

// statusOf is the one mapping of a core's error kinds to HTTP statuses.
var statusOf = map[fault.Kind]int{
	fault.KindMalformed:       http.StatusBadRequest,
	fault.KindInvalid:         http.StatusUnprocessableEntity,
	fault.KindUnauthenticated: http.StatusUnauthorized,
	fault.KindForbidden:       http.StatusForbidden,
	fault.KindNotFound:        http.StatusNotFound,
	fault.KindConflict:        http.StatusConflict,
	fault.KindTooLarge:        http.StatusRequestEntityTooLarge,
	fault.KindUnsupported:     http.StatusUnsupportedMediaType,
	fault.KindRateLimited:     http.StatusTooManyRequests,
	fault.KindUnavailable:     http.StatusServiceUnavailable,
	fault.KindBadUpstream:     http.StatusBadGateway,
	fault.KindTimeout:         http.StatusGatewayTimeout,
}

// Status is the HTTP status of a core's error kind (500 for KindInternal).
func Status(k fault.Kind) int {
	if s, ok := statusOf[k]; ok {
		return s
	}
	return http.StatusInternalServerError
}

// FromFault renders a core's error as a problem.
func FromFault(f *fault.Error) *Error {
	if f.Kind == fault.KindInternal {
		return Internal()
	}
	p := newErr(Status(f.Kind), f.Code, f.Detail)
	p.Errors, p.Extra, p.RetryAfter, p.Fault = f.Fields, f.Extra, f.RetryAfter, f
	if f.Kind == fault.KindUnauthenticated {
		p.Header = http.Header{"Www-Authenticate": {`Bearer realm="crm"`}}
	}
	return p
}

// From returns the *Error inside err, the problem of a core's *fault.Error,
// or Internal for anything else.
func From(err error) *Error {
	var p *Error
	if errors.As(err, &p) {
		return p
	}
	var f *fault.Error
	if errors.As(err, &f) {
		return FromFault(f)
	}
	if unstorable(err) {
		return Unstorable()
	}
	if unreachable(err) {
		return DependencyDown()
	}
	return Internal()
}

// unreachable reports an error of a connection to a dependency (the
// database, mostly) that could not be opened or broke: refused, reset,
// cut short, timed out at the network, already closed, or closed by a
// server shutting down (SQLSTATE class 08 and 57P01-57P03). The service is not at fault
// and a retry later may succeed: 503, not 500. Matched by standard error
// types and the SQLState method, keeping this package free of the driver.
func unreachable(err error) bool {
	var ne net.Error
	if errors.As(err, &ne) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) {
		return true
	}
	// The driver marks an error that happened before the statement reached
	// the server (such as its "conn closed" after a broken connection).
	var retryable interface{ SafeToRetry() bool }
	if errors.As(err, &retryable) && retryable.SafeToRetry() {
		return true
	}
	var pg interface{ SQLState() string }
	if errors.As(err, &pg) {
		code := pg.SQLState()
		return strings.HasPrefix(code, "08") || code == "57P01" || code == "57P02" || code == "57P03"
	}
	return false
}

// DependencyDown is the answer while a dependency cannot be reached.
func DependencyDown() *Error {
	return Unavailable("a dependency of the service is unavailable; retry later", 1)
}

// unstorable reports a PostgreSQL data exception that only a value sent by
// the client can cause: a character text cannot hold, a date or number out
// of the type's range, a string over a column's length. Validation should
// refuse such values first, with the field named; this is the net under
// it, so a value that slips through is still a 422 and not a 500. The
// driver's error is matched by its SQLState method, keeping this package
// free of the driver.
func unstorable(err error) bool {
	var pg interface{ SQLState() string }
	if !errors.As(err, &pg) {
		return false
	}
	switch pg.SQLState() {
	case "22021", "22P05", "22008", "22003", "22001":
		return true
	}
	return false
}

// Unstorable is the answer for a value PostgreSQL refused to store.
func Unstorable() *Error {
	return newErr(http.StatusUnprocessableEntity, "validation_failed",
		"a value cannot be stored: it holds a NUL character or invalid text, or a date or number is out of range")
}

type requestIDKey struct{}

// WithRequestID stores the request id so problem bodies and logs carry it.
func WithRequestID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, requestIDKey{}, id)
}

// RequestID returns the id stored by WithRequestID, or "".
func RequestID(ctx context.Context) string {
	s, _ := ctx.Value(requestIDKey{}).(string)
	return s
}

// Body is the JSON shape of a problem.
type Body struct {
	Type      string         `json:"type"`
	Title     string         `json:"title"`
	Status    int            `json:"status"`
	Detail    string         `json:"detail,omitempty"`
	Code      string         `json:"code"`
	RequestID string         `json:"request_id,omitempty"`
	Errors    []FieldError   `json:"errors,omitempty"`
	Extra     map[string]any `json:"-"`
}

// MarshalJSON flattens Extra members into the body, as RFC 9457 extensions.
func (b Body) MarshalJSON() ([]byte, error) {
	type plain Body
	raw, err := json.Marshal(plain(b))
	if err != nil || len(b.Extra) == 0 {
		return raw, err
	}
	m := map[string]any{}
	for k, v := range b.Extra {
		m[k] = v
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, err
	}
	return json.Marshal(m)
}

// TypeURI is the problem type reference for a code; it resolves against the
// API's documentation page.
func TypeURI(code string) string { return "/docs/problems#" + code }

// BodyOf builds the body for e as seen by a request with the given id.
func BodyOf(e *Error, requestID string) Body {
	return Body{
		Type: TypeURI(e.Code), Title: e.Title, Status: e.Status, Detail: e.Detail,
		Code: e.Code, RequestID: requestID, Errors: e.Errors, Extra: e.Extra,
	}
}

// Write renders err as problem+json. 5xx errors are logged with the request
// id and the real cause; 4xx are not errors of the server and are not logged.
func Write(w http.ResponseWriter, r *http.Request, err error) {
	p := From(err)
	reqID := RequestID(r.Context())
	if p.Status >= 500 {
		level := slog.LevelError
		if errors.Is(err, context.Canceled) {
			level = slog.LevelInfo
		}
		slog.Default().Log(r.Context(), level, "request failed",
			"error", err.Error(), "status", p.Status, "method", r.Method, "path", r.URL.Path)
	} else if unstorable(err) {
		// A client error, but one validation should have named: worth seeing.
		slog.Default().WarnContext(r.Context(), "value refused by the database",
			"error", err.Error(), "method", r.Method, "path", r.URL.Path)
	}
	for k, vs := range p.Header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	if p.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(p.RetryAfter))
	}
	w.Header().Set("Content-Type", ContentType)
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(p.Status)
	_ = json.NewEncoder(w).Encode(BodyOf(p, reqID))
}
