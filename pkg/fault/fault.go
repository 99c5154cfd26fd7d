// Package fault is the error vocabulary of the cores: a kind (not found,
// conflict, invalid with fields, forbidden, unavailable, ...), a stable
// machine code and a detail for people, and nothing about transport. Stores
// and domain services return these; each edge maps a kind to its status in
// one place (pkg/problem for HTTP), so a core never names a status code.
package fault

import (
	"errors"
	"fmt"
)

// Kind is what went wrong, as a caller should react to it.
type Kind uint8

// The kinds a core may return. KindInternal is the zero value: anything that is
// not a *Error is treated as KindInternal by every edge.
const (
	KindInternal Kind = iota
	// KindMalformed input cannot be read at all (a file that is not CSV).
	KindMalformed
	// KindInvalid input was read but breaks a rule; Fields names each one.
	KindInvalid
	// KindUnauthenticated: the credential is missing, wrong or expired.
	KindUnauthenticated
	// KindForbidden: the caller is known but may not do this.
	KindForbidden
	// KindNotFound: the record does not exist or is not visible to the caller.
	KindNotFound
	// KindConflict: the request contradicts the record's current state.
	KindConflict
	// KindTooLarge: the input is over its limit.
	KindTooLarge
	// KindUnsupported: the input's type is not one the operation takes.
	KindUnsupported
	// KindRateLimited: the caller is over its quota.
	KindRateLimited
	// KindUnavailable: a dependency cannot serve now; a retry later may work.
	KindUnavailable
	// KindBadUpstream: a dependency answered with something it should not have.
	KindBadUpstream
	// KindTimeout: a dependency did not answer in time.
	KindTimeout
)

var kindNames = [...]string{"internal", "malformed", "invalid", "unauthenticated", "forbidden",
	"not_found", "conflict", "too_large", "unsupported", "rate_limited", "unavailable", "bad_upstream", "timeout"}

func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("kind(%d)", k)
}

// Field names one invalid input field.
type Field struct {
	Field   string `json:"field"`
	Message string `json:"message"`
}

// Error is a failure a client can act on. Code is stable and
// machine-readable ("lead_already_qualified"); Detail is for people.
type Error struct {
	Kind   Kind
	Code   string
	Detail string
	// Fields lists every invalid field of an Invalid error.
	Fields []Field
	// Extra carries members a client needs to act (the existing record's id
	// on a duplicate, say); edges add them to the error body.
	Extra map[string]any
	// RetryAfter, in seconds, hints when a retry may succeed (0: no hint).
	RetryAfter int
}

func (e *Error) Error() string {
	if e.Detail != "" {
		return e.Code + ": " + e.Detail
	}
	return e.Code
}

// Coder is any error with a stable code; errors.Is between a *Error and
// another coded error (an edge's rendered problem) compares codes.
type Coder interface{ FaultCode() string }

// FaultCode returns the error's code.
func (e *Error) FaultCode() string { return e.Code }

// Is makes errors.Is(err, fault.NotFound("")) match on the code.
func (e *Error) Is(target error) bool {
	var c Coder
	if errors.As(target, &c) {
		return c.FaultCode() == e.Code
	}
	return false
}

// With returns a copy carrying an extra member.
func (e *Error) With(key string, value any) *Error {
	c := *e
	c.Extra = make(map[string]any, len(e.Extra)+1)
	for k, v := range e.Extra {
		c.Extra[k] = v
	}
	c.Extra[key] = value
	return &c
}

// New is an error of kind with code and detail.
func New(kind Kind, code, detail string) *Error {
	return &Error{Kind: kind, Code: code, Detail: detail}
}

// KindOf is the kind of the *Error inside err, KindInternal for anything else.
func KindOf(err error) Kind {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return KindInternal
}

// NotFound says the named resource does not exist (or is not a child of the
// parent named with it).
func NotFound(resource string) *Error {
	d := "resource not found"
	if resource != "" {
		d = resource + " not found"
	}
	return New(KindNotFound, "not_found", d)
}

// Conflict is a request that contradicts current state; code "" is "conflict".
func Conflict(code, detail string) *Error {
	if code == "" {
		code = "conflict"
	}
	return New(KindConflict, code, detail)
}

// Validation is invalid input with one entry per bad field.
func Validation(fields ...Field) *Error {
	e := New(KindInvalid, "validation_failed", "one or more fields are invalid")
	e.Fields = fields
	return e
}

// Invalidf is a single-field validation error.
func Invalidf(field, format string, args ...any) *Error {
	return Validation(Field{Field: field, Message: fmt.Sprintf(format, args...)})
}

// Forbidden is a known caller lacking the right.
func Forbidden(detail string) *Error { return New(KindForbidden, "forbidden", detail) }

// Unauthenticated is a missing, wrong or expired credential.
func Unauthenticated(detail string) *Error {
	return New(KindUnauthenticated, "unauthenticated", detail)
}

// Malformedf is input that cannot be read at all, under code.
func Malformedf(code, format string, args ...any) *Error {
	return New(KindMalformed, code, fmt.Sprintf(format, args...))
}

// TooLargef is input over its limit.
func TooLargef(format string, args ...any) *Error {
	return New(KindTooLarge, "payload_too_large", fmt.Sprintf(format, args...))
}

// Unsupportedf is input of a type the operation does not take.
func Unsupportedf(format string, args ...any) *Error {
	return New(KindUnsupported, "unsupported_media_type", fmt.Sprintf(format, args...))
}

// Unavailablef is a dependency that cannot serve now.
func Unavailablef(retryAfter int, format string, args ...any) *Error {
	e := New(KindUnavailable, "upstream_unavailable", fmt.Sprintf(format, args...))
	e.RetryAfter = retryAfter
	return e
}

// Invalid is a single-field validation error.
func Invalid(field, message string) *Error { return Validation(Field{Field: field, Message: message}) }

// RateLimited is a caller over its quota, who may retry after retryAfter
// seconds (0: no hint).
func RateLimited(retryAfter int, detail string) *Error {
	e := New(KindRateLimited, "rate_limited", detail)
	e.RetryAfter = retryAfter
	return e
}
