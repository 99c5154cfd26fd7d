package contracts

import "testing"

// TestRenewalNote: the note names the whole move, so a run that adds
// several terms does not claim a single one.
func TestRenewalNote(t *testing.T) {
	t.Parallel()
	tests := []struct {
		months, terms int
		want          string
	}{
		{12, 1, "Contract renewed automatically by 12 months: termination date moved from 2025-01-31 to 2027-01-31."},
		{12, 2, "Contract renewed automatically by 24 months (2 terms of 12): termination date moved from 2025-01-31 to 2027-01-31."},
		{1, 1, "Contract renewed automatically by 1 month: termination date moved from 2025-01-31 to 2027-01-31."},
		{1, 3, "Contract renewed automatically by 3 months (3 terms of 1): termination date moved from 2025-01-31 to 2027-01-31."},
	}
	for _, tc := range tests {
		if got := RenewalNote("2025-01-31", "2027-01-31", tc.months, tc.terms); got != tc.want {
			t.Errorf("RenewalNote(%d, %d) = %q, want %q", tc.months, tc.terms, got, tc.want)
		}
	}
}
