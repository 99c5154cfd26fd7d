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

// RenewalAnchor is the date a contract's terms are counted from: end_date
// when it is set (termination = end_date, each renewal one more term),
// else effective_date (termination = effective_date + term_months).
func RenewalAnchor(endDate *string, effectiveDate string) (time.Time, error) {
	if endDate != nil {
		return ParseDate(*endDate)
	}
	return ParseDate(effectiveDate)
}

// RenewedTermination moves a termination date that is before today forward
// to the first term boundary on or after today and returns it with the
// number of terms added. Boundaries are anchor + k × termMonths, each
// clamped from the fixed anchor (see RenewalAnchor), never from the
// previous, possibly clamped, termination date: a one-month term from
// Jan 31 ends Feb 28, Mar 31, Apr 30, and twelve months from 2024-02-29
// end 2028-02-29 in a leap year, so the result does not depend on how
// often renewals ran (a catch-up run gives the dates daily runs give).
func RenewedTermination(anchor, termination time.Time, termMonths int, today time.Time) (time.Time, int) {
	if termMonths <= 0 || !termination.Before(today) {
		return termination, 0
	}
	terms := 0
	next := termination
	for k := 1; next.Before(today); k++ {
		b := AddMonths(anchor, k*termMonths)
		if b.Year() > 9999 {
			break
		}
		if !b.After(termination) {
			continue
		}
		next = b
		terms++
	}
	return next, terms
}

// ExpiryNote is the system note written when a contract expires.
func ExpiryNote(termination string) string {
	return fmt.Sprintf("Contract expired: its termination date %s has passed.", termination)
}

// RenewalNote is the system note written when a contract renews itself by
// terms terms of months each. A catch-up run can add several terms at once,
// and the note states the whole move (24 months for two terms of 12), so
// it agrees with the dates it names.
func RenewalNote(from, to string, months, terms int) string {
	by := fmt.Sprintf("%d months", months*terms)
	if months*terms == 1 {
		by = "1 month"
	}
	if terms > 1 {
		by += fmt.Sprintf(" (%d terms of %d)", terms, months)
	}
	return fmt.Sprintf("Contract renewed automatically by %s: termination date moved from %s to %s.", by, from, to)
}
