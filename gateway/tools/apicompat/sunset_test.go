package main

import (
	"encoding/json"
	"slices"
	"testing"
)

// TestSunsetChanges: a sunset given to what the release deprecated
// already must be six months away (oasdiff checks the date only when
// something newly becomes deprecated), and a sunset may only move later
// (oasdiff's own check).
func TestSunsetChanges(t *testing.T) {
	t.Parallel()
	secretPrefix := func(d doc) doc {
		return at(t, d, "components", "schemas", "Webhook", "properties", "secret_prefix").(doc)
	}
	deleteOp := func(d doc) doc { return at(t, d, "paths", "/contacts/{id}", "delete").(doc) }
	tests := []struct {
		name     string
		base     func(d doc)
		revision func(d doc)
		want     []Finding
	}{
		{
			name:     "a deprecated property given a sunset six months away",
			base:     func(d doc) { delete(secretPrefix(d), "x-sunset") },
			revision: func(d doc) { secretPrefix(d)["x-sunset"] = "2027-06-01" },
		},
		{
			name:     "a deprecated property given a sunset one month away",
			base:     func(d doc) { delete(secretPrefix(d), "x-sunset") },
			revision: func(d doc) { secretPrefix(d)["x-sunset"] = "2027-01-01" },
			want: []Finding{{Operation: "schema Webhook", ID: "sunset-too-soon",
				Text: "the property secret_prefix was given the sunset 2027-01-01, less than 183 days from now"}},
		},
		{
			name: "a deprecated operation's sunset moved earlier",
			base: func(d doc) {
				deleteOp(d)["deprecated"], deleteOp(d)["x-sunset"] = true, "2027-08-01"
			},
			revision: func(d doc) { deleteOp(d)["x-sunset"] = "2027-07-01" },
			// oasdiff's own finding.
			want: []Finding{{Operation: "DELETE /contacts/{id}", ID: "api-sunset-date-changed-earlier",
				Text: "API sunset date changed to an earlier date, from `2027-08-01` to `2027-07-01`"}},
		},
		{
			name:     "a deprecated operation given a sunset one month away",
			base:     func(d doc) { deleteOp(d)["deprecated"] = true },
			revision: func(d doc) { deleteOp(d)["x-sunset"] = "2027-01-01" },
			want: []Finding{{Operation: "DELETE /contacts/{id}", ID: "sunset-too-soon",
				Text: "the operation was given the sunset 2027-01-01, less than 183 days from now"}},
		},
		{
			name: "a deprecated operation's sunset moved later",
			base: func(d doc) {
				deleteOp(d)["deprecated"], deleteOp(d)["x-sunset"] = true, "2027-08-01"
			},
			revision: func(d doc) { deleteOp(d)["x-sunset"] = "2027-09-01" },
		},
		{
			name: "a deprecated parameter given a sunset one month away",
			base: func(d doc) {
				param(t, d, "/contacts", "get", "search")["deprecated"] = true
			},
			revision: func(d doc) {
				param(t, d, "/contacts", "get", "search")["x-sunset"] = "2027-01-01"
			},
			want: []Finding{{Operation: "GET /contacts", ID: "sunset-too-soon",
				Text: "the parameter search was given the sunset 2027-01-01, less than 183 days from now"}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			base := readReleased(t)
			tc.base(base)
			b := encode(t, base)
			var rev doc
			if err := json.Unmarshal(b, &rev); err != nil {
				t.Fatal(err)
			}
			tc.revision(rev)
			got, err := Check(b, encode(t, rev), now)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(tc.want, got) {
				t.Errorf("findings:\n%s\nwant:\n%s", list(got), list(tc.want))
			}
		})
	}
}
