package route

import (
	"testing"
	"time"

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

func TestDeprecationCheck(t *testing.T) {
	t.Parallel()
	since := Day(2026, time.December, 1)
	tests := []struct {
		name string
		d    *Deprecation
		want string
	}{
		{"none", nil, ""},
		{"six months", &Deprecation{Since: since, Sunset: since.AddDate(0, 0, SunsetDays)}, ""},
		{"a year", &Deprecation{Since: since, Sunset: Day(2027, time.December, 1), Replacement: "GET /things"}, ""},
		{"one day short", &Deprecation{Since: since, Sunset: since.AddDate(0, 0, SunsetDays-1)},
			"deprecation: sunset 2027-06-01 is less than 183 days after 2026-12-01"},
		{"sunset before since", &Deprecation{Since: since, Sunset: Day(2026, time.November, 1)},
			"deprecation: sunset 2026-11-01 is less than 183 days after 2026-12-01"},
		{"no sunset", &Deprecation{Since: since}, "deprecation: no sunset date"},
		{"no dates", &Deprecation{Replacement: "x"}, "deprecation: no since date\ndeprecation: no sunset date"},
		{"not midnight", &Deprecation{Since: since.Add(time.Hour), Sunset: Day(2027, time.December, 1)},
			"deprecation: since 2026-12-01 01:00:00 +0000 UTC is not a date (UTC midnight)"},
		{"not UTC", &Deprecation{Since: since, Sunset: time.Date(2027, time.December, 1, 0, 0, 0, 0, time.FixedZone("CET", 3600))},
			"deprecation: sunset 2027-12-01 00:00:00 +0100 CET is not a date (UTC midnight)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := ""
			if err := tc.d.Check(); err != nil {
				got = err.Error()
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Check (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCheckDeprecations(t *testing.T) {
	t.Parallel()
	short := &Deprecation{Since: Day(2026, time.December, 1), Sunset: Day(2027, time.January, 1)}
	ok := &Deprecation{Since: Day(2026, time.December, 1), Sunset: Day(2027, time.June, 2)}
	p := Q("old", "string", "Old filter.")
	p.Deprecated = short
	tests := []struct {
		name string
		r    Route
		want string
	}{
		{"none", Route{Method: "GET", Path: "/things", Query: PageQuery()}, ""},
		{"valid", Route{Method: "GET", Path: "/things", Deprecated: ok}, ""},
		{"route and parameter", Route{Method: "GET", Path: "/things", Deprecated: short, Query: []Param{Page, p}},
			"GET /things: deprecation: sunset 2027-01-01 is less than 183 days after 2026-12-01\n" +
				"GET /things: query parameter old: deprecation: sunset 2027-01-01 is less than 183 days after 2026-12-01"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := ""
			if err := tc.r.CheckDeprecations(); err != nil {
				got = err.Error()
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("CheckDeprecations (-want +got):\n%s", diff)
			}
		})
	}
}
