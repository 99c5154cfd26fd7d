package store

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/opencrm/crm/pkg/list"
	"github.com/opencrm/crm/services/identity/internal/identity"
)

// TestUserSorts keeps the store's sort whitelist equal to the keys the edge
// accepts, and each key's ORDER BY as the user list has always sorted.
func TestUserSorts(t *testing.T) {
	t.Parallel()
	if diff := cmp.Diff(slices.Sorted(slices.Values(identity.UserSorts)), slices.Sorted(slices.Values(userSorts.Keys()))); diff != "" {
		t.Errorf("sort keys (-domain +store):\n%s", diff)
	}
	tests := []struct {
		sortBy string
		desc   bool
		want   string
	}{
		{identity.DefaultUserSort, false, "ORDER BY lower(name) ASC, id ASC"},
		{"email", true, "ORDER BY lower(email) DESC, id DESC"},
		{"role", false, "ORDER BY role ASC, id ASC"},
		{"created_at", true, "ORDER BY created_at DESC, id DESC"},
		{"updated_at", false, "ORDER BY updated_at ASC, id ASC"},
	}
	for _, tc := range tests {
		got := userSorts.OrderBy(list.Query{SortBy: tc.sortBy, Desc: tc.desc})
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("OrderBy(%s, desc %v) (-want +got):\n%s", tc.sortBy, tc.desc, diff)
		}
	}
}
