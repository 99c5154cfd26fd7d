// Package timestamp is the API's one timestamp shape: ISO 8601 in UTC with
// exactly six fractional digits (2026-11-22T03:10:26.123400Z), as docs/api.md
// documents. time.Time's JSON drops trailing zeros, so every context would
// otherwise invent its own wrapper.
package timestamp

import (
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgtype"
)

// Layout is the platform's timestamp format.
const Layout = "2006-01-02T15:04:05.000000Z"

// Time marshals as Layout and scans from timestamptz columns.
type Time struct{ time.Time }

// Of wraps t.
func Of(t time.Time) Time { return Time{t} }

// Now is the current time truncated to PostgreSQL's precision.
func Now() Time { return Time{time.Now().UTC().Truncate(time.Microsecond)} }

// Ptr wraps a nullable time.
func Ptr(t *time.Time) *Time {
	if t == nil {
		return nil
	}
	return &Time{*t}
}

// String formats as Layout.
func (t Time) String() string { return t.UTC().Format(Layout) }

// MarshalJSON writes the platform format.
func (t Time) MarshalJSON() ([]byte, error) {
	return []byte(`"` + t.String() + `"`), nil
}

// UnmarshalJSON accepts any RFC 3339 timestamp.
func (t *Time) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	if len(b) < 2 || b[0] != '"' || b[len(b)-1] != '"' {
		return fmt.Errorf("timestamp must be a string")
	}
	v, err := time.Parse(time.RFC3339Nano, string(b[1:len(b)-1]))
	if err != nil {
		return fmt.Errorf("timestamp must be RFC 3339: %w", err)
	}
	t.Time = v.UTC()
	return nil
}

// ScanTimestamptz lets pgx scan timestamptz (and, via pointers, NULL).
func (t *Time) ScanTimestamptz(v pgtype.Timestamptz) error {
	if !v.Valid {
		return fmt.Errorf("timestamp: cannot scan NULL into a non-pointer")
	}
	t.Time = v.Time.UTC()
	return nil
}

// TimestamptzValue lets pgx encode the value as timestamptz.
func (t Time) TimestamptzValue() (pgtype.Timestamptz, error) {
	return pgtype.Timestamptz{Time: t.Time, Valid: true}, nil
}
