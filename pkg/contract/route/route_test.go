package route

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestScope(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		r    Route
		want string
	}{
		{"public", Route{Method: "POST", Auth: Public}, ""},
		{"key", Route{Method: "POST", Auth: Key, Resource: "leads"}, ""},
		{"jwt without resource", Route{Method: "GET", Auth: JWT}, ""},
		{"jwt read", Route{Method: "GET", Auth: JWT, Resource: "leads"}, "leads:read"},
		{"jwt head", Route{Method: "HEAD", Auth: JWT, Resource: "leads"}, "leads:read"},
		{"jwt write", Route{Method: "DELETE", Auth: JWT, Resource: "leads"}, "leads:write"},
		{"admin", Route{Method: "GET", Auth: Admin}, "admin"},
		{"admin with resource", Route{Method: "POST", Auth: Admin, Resource: "webhooks"}, "webhooks:write"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if diff := cmp.Diff(tc.want, tc.r.Scope()); diff != "" {
				t.Errorf("Scope (-want +got):\n%s", diff)
			}
		})
	}
}

func TestLocation(t *testing.T) {
	t.Parallel()
	tests := []struct {
		path string
		ids  []int64
		want string
	}{
		{"/leads/{id}", []int64{42}, "/api/leads/42"},
		{"/contacts/{id}/notes/{noteId}", []int64{7, 5}, "/api/contacts/7/notes/5"},
		{"/contracts/{id}/executed", []int64{3}, "/api/contracts/3/executed"},
		{"/quotes/{id}", nil, "/api/quotes/{id}"},
	}
	for _, tc := range tests {
		got := Route{Method: "GET", Path: tc.path}.Location(tc.ids...)
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("Location(%s, %v) (-want +got):\n%s", tc.path, tc.ids, diff)
		}
	}
}

func TestDefaults(t *testing.T) {
	t.Parallel()
	r := Route{Method: "GET", Path: "/leads"}
	got := []any{r.Limit(), r.SuccessStatus(), r.HasBody(), r.Pattern()}
	want := []any{LimitJSON, 200, false, "GET /leads"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("defaults (-want +got):\n%s", diff)
	}
}

func TestParams(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		got  Param
		want Param
	}{
		{"id", ID("deal_id", ""), Param{Name: "deal_id", Type: "integer", Min: new(1)}},
		{"date", Date("date_to", "to"), Param{Name: "date_to", Type: "string", Desc: "to", Format: "date"}},
		{"enum", Q("status", "string", "", "a", "b"), Param{Name: "status", Type: "string", Enum: []string{"a", "b"}}},
	}
	for _, tc := range tests {
		if diff := cmp.Diff(tc.want, tc.got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, diff)
		}
	}
}
