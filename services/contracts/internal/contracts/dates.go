package contracts

import (
	"fmt"
	"time"
)

// AddMonths adds n calendar months, clamping to the last day of the target
// month (Jan 31 + 1 month = Feb 28/29), as PostgreSQL's date + interval
// does; time.AddDate would overflow into the next month instead.
func AddMonths(d time.Time, n int) time.Time {
	y, m, day := d.Date()
	first := time.Date(y, m+time.Month(n), 1, 0, 0, 0, 0, time.UTC)
	last := first.AddDate(0, 1, -1).Day()
	if day > last {
		day = last
	}
	return time.Date(first.Year(), first.Month(), day, 0, 0, 0, 0, time.UTC)
}

// Day truncates t to its UTC calendar day.
func Day(t time.Time) time.Time {
	y, m, d := t.UTC().Date()
	return time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
}

// FormatDate writes YYYY-MM-DD.
func FormatDate(t time.Time) string { return t.Format(time.DateOnly) }

// ParseDate reads YYYY-MM-DD.
func ParseDate(s string) (time.Time, error) { return time.Parse(time.DateOnly, s) }

// RenewedTermination moves a termination date forward by whole terms from
// the original date until it is no longer before today, so a renewal that
// was missed for several terms lands on the right boundary. It returns the
// new date and the number of terms added.
func RenewedTermination(termination time.Time, termMonths int, today time.Time) (time.Time, int) {
	if termMonths <= 0 {
		return termination, 0
	}
	k := 0
	next := termination
	for next.Before(today) {
		k++
		next = AddMonths(termination, k*termMonths)
	}
	return next, k
}

// ExpiryNote is the system note written when a contract expires.
func ExpiryNote(termination string) string {
	return fmt.Sprintf("Contract expired: its termination date %s has passed.", termination)
}

// RenewalNote is the system note written when a contract renews itself.
func RenewalNote(from, to string, months int) string {
	return fmt.Sprintf("Contract renewed automatically by %d months: termination date moved from %s to %s.", months, from, to)
}
