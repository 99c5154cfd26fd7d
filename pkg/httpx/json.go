// Package httpx holds the HTTP plumbing every service shares: JSON in and
// out, request ids, access logs, panic recovery, metrics, and a server with
// /healthz, /readyz and /metrics that shuts down gracefully.
package httpx

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"

	"github.com/opencrm/crm/pkg/problem"
)

// MaxJSONBody is the default limit for JSON request bodies (1 MB).
const MaxJSONBody = 1 << 20

// JSON writes v with the given status.
func JSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// Error writes err as problem+json (see problem.Write).
func Error(w http.ResponseWriter, r *http.Request, err error) { problem.Write(w, r, err) }

// Decode reads a JSON body of at most maxBytes into dst. It answers the
// client-facing categories: 415 for a non-JSON content type, 413 for a body
// over the limit, 400 for malformed JSON, 422 for a value of the wrong type.
// Unknown fields are ignored, as the API promises.
func Decode(w http.ResponseWriter, r *http.Request, dst any, maxBytes int64) error {
	if maxBytes <= 0 {
		maxBytes = MaxJSONBody
	}
	if err := RequireJSON(r); err != nil {
		return err
	}
	if r.ContentLength > maxBytes {
		return bodyTooLarge(maxBytes)
	}
	return decodeFrom(http.MaxBytesReader(w, r.Body, maxBytes), dst, maxBytes)
}

// DecodeBytes decodes one JSON value already read (an item of a batch)
// with Decode's rules and answers (413 over maxBytes, 400 malformed, 422
// wrong type), so an item fails alone and as its single call would.
func DecodeBytes(raw []byte, dst any, maxBytes int64) error {
	if maxBytes <= 0 {
		maxBytes = MaxJSONBody
	}
	if int64(len(raw)) > maxBytes {
		return bodyTooLarge(maxBytes)
	}
	return decodeFrom(bytes.NewReader(raw), dst, maxBytes)
}

func decodeFrom(body io.Reader, dst any, maxBytes int64) error {
	dec := json.NewDecoder(body)
	dec.UseNumber()
	if err := dec.Decode(dst); err != nil {
		return decodeError(err, maxBytes)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return bodyTooLarge(maxBytes)
		}
		return problem.MalformedJSON("body must hold a single JSON value")
	}
	return nil
}

// RequireJSON answers 415 unless the request declares a JSON media type.
func RequireJSON(r *http.Request) error {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || !(mt == "application/json" || strings.HasSuffix(mt, "+json")) {
		return problem.UnsupportedMediaType("Content-Type must be application/json")
	}
	return nil
}

func bodyTooLarge(maxBytes int64) error {
	return problem.TooLarge(fmt.Sprintf("body exceeds %d bytes", maxBytes))
}

func decodeError(err error, maxBytes int64) error {
	var mbe *http.MaxBytesError
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	var fe *FieldTypeError
	switch {
	case errors.As(err, &mbe):
		return bodyTooLarge(maxBytes)
	case errors.As(err, &fe):
		return problem.Invalid(fe.Field, fe.Message)
	case errors.As(err, &typ):
		field := typ.Field
		if field == "" {
			return problem.MalformedJSON("body must be a JSON object")
		}
		return problem.Invalid(field, "must be "+jsonKind(typ.Type.Kind().String()))
	case errors.As(err, &syn), errors.Is(err, io.ErrUnexpectedEOF):
		return problem.MalformedJSON("body is not valid JSON at offset " + strconv.FormatInt(offset(syn), 10))
	case errors.Is(err, io.EOF):
		return problem.MalformedJSON("body is empty")
	default:
		return problem.MalformedJSON("body is not valid JSON")
	}
}

func offset(s *json.SyntaxError) int64 {
	if s == nil {
		return 0
	}
	return s.Offset
}

// jsonKind names a Go kind as the JSON type a client should send, with
// its article.
func jsonKind(k string) string {
	switch {
	case strings.HasPrefix(k, "int"), strings.HasPrefix(k, "uint"):
		return "an integer"
	case strings.HasPrefix(k, "float"):
		return "a number"
	case k == "bool":
		return "a boolean"
	case k == "slice", k == "array":
		return "an array"
	case k == "struct", k == "map", k == "ptr":
		return "an object"
	default:
		return "a " + k
	}
}

// FieldTypeError lets a custom UnmarshalJSON name the field it rejected.
type FieldTypeError struct{ Field, Message string }

func (e *FieldTypeError) Error() string { return e.Field + ": " + e.Message }

// Created writes 201 {"success":true,"data":v,"message":msg}.
func Created(w http.ResponseWriter, v any, msg string) {
	JSON(w, http.StatusCreated, map[string]any{"success": true, "data": v, "message": msg})
}

// OK writes 200 {"success":true,"data":v}.
func OK(w http.ResponseWriter, v any) {
	JSON(w, http.StatusOK, map[string]any{"success": true, "data": v})
}

// Updated writes 200 {"success":true,"data":v,"message":msg}.
func Updated(w http.ResponseWriter, v any, msg string) {
	JSON(w, http.StatusOK, map[string]any{"success": true, "data": v, "message": msg})
}

// Deleted writes 200 {"success":true,"message":msg}.
func Deleted(w http.ResponseWriter, msg string) {
	JSON(w, http.StatusOK, map[string]any{"success": true, "message": msg})
}

// PathID parses the named path value as a positive int64, 404 otherwise
// (an id that cannot exist is simply not found).
func PathID(r *http.Request, name string) (int64, error) {
	n, err := strconv.ParseInt(r.PathValue(name), 10, 64)
	if err != nil || n <= 0 {
		return 0, problem.NotFound("")
	}
	return n, nil
}
