package audit

import (
	"net/url"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestFiltersKeepNoPersonalData: what may be a person's data becomes its
// kind; ids, counters, dates, booleans and choices stay.
func TestFiltersKeepNoPersonalData(t *testing.T) {
	t.Parallel()
	q := url.Values{
		"search":             {"ann@example.com"},
		"email":              {"ann@example.com"},
		"phone":              {"5551234"},
		"cf[nickname]":       {"Annie"},
		"status":             {"active", "lead"},
		"source":             {"web"},
		"sort_by":            {"created_at"},
		"company_id":         {"42"},
		"assigned_to":        {"7"},
		"per_page":           {"100"},
		"created_from":       {"2026-01-31"},
		"updated_since":      {"2026-01-31T10:00:00Z"},
		"cf[vip]":            {"true"},
		"cf[score][gte]":     {"12"},
		"company_id_unknown": {"x"},
	}
	want := map[string]any{
		"search": TextKind, "email": TextKind, "phone": TextKind, "cf[nickname]": TextKind,
		"status": []string{"active", "lead"}, "source": "web", "sort_by": "created_at",
		"company_id": "42", "assigned_to": "7", "per_page": "100",
		"created_from": "2026-01-31", "updated_since": "2026-01-31T10:00:00Z", "cf[vip]": "true",
		"cf[score][gte]": TextKind, "company_id_unknown": TextKind,
	}
	if diff := cmp.Diff(want, Filters(q)); diff != "" {
		t.Errorf("Filters (-want +got):\n%s", diff)
	}
}
