// Package patch models the API's update rule for optional fields: a field
// absent from a PUT body keeps its value, an explicit null (or "") clears it,
// and a value sets it. encoding/json alone cannot tell absent from null.
package patch

import (
	"bytes"
	"encoding/json"
	"reflect"
)

// Field is one optional field of an update body.
type Field[T any] struct {
	// Set is true when the field appeared in the body (even as null).
	Set bool
	// Null is true when the field was given as JSON null.
	Null bool
	// Value holds the decoded value when Set && !Null.
	Value T
}

// UnmarshalJSON records presence and nullness. `""` clears a field that is
// not text (a number, a boolean) as null does (the API's rule in
// docs/api.md: null or "" clears one); a text field, or a type that decodes strings itself, gets
// the empty string and decides.
func (f *Field[T]) UnmarshalJSON(b []byte) error {
	f.Set = true
	b = bytes.TrimSpace(b)
	if bytes.Equal(b, []byte("null")) || (bytes.Equal(b, []byte(`""`)) && !takesText[T]()) {
		f.Null = true
		var zero T
		f.Value = zero
		return nil
	}
	return json.Unmarshal(b, &f.Value)
}

// takesText reports whether T decodes a JSON string itself: a string kind,
// or a type with its own UnmarshalJSON.
func takesText[T any]() bool {
	t := reflect.TypeFor[T]()
	return t.Kind() == reflect.String || t.Implements(unmarshaler) || reflect.PointerTo(t).Implements(unmarshaler)
}

var unmarshaler = reflect.TypeFor[json.Unmarshaler]()

// Of returns a set field holding v.
func Of[T any](v T) Field[T] { return Field[T]{Set: true, Value: v} }

// Apply writes the field into dst when it was given: nil for null, the
// value otherwise. It reports whether it changed dst.
func (f Field[T]) Apply(dst **T) bool {
	if !f.Set {
		return false
	}
	if f.Null {
		*dst = nil
		return true
	}
	v := f.Value
	*dst = &v
	return true
}

// Ptr returns nil when absent or null, else a pointer to the value.
func (f Field[T]) Ptr() *T {
	if !f.Set || f.Null {
		return nil
	}
	v := f.Value
	return &v
}

// IsZero reports an absent field, so a body encoded with `omitzero` leaves
// it out: a typed client sends exactly what its caller set.
func (f Field[T]) IsZero() bool { return !f.Set }

// MarshalJSON writes null for a cleared field and the value otherwise.
func (f Field[T]) MarshalJSON() ([]byte, error) {
	if f.Null {
		return []byte("null"), nil
	}
	return json.Marshal(f.Value)
}

// Null returns a field given as JSON null (clear the value).
func Null[T any]() Field[T] { return Field[T]{Set: true, Null: true} }
