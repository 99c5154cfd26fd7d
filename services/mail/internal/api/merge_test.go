package api_test

import (
	"context"
	"net/http"
	"slices"
	"testing"

	"github.com/opencrm/crm/pkg/contract/mergeapi"
)

// TestMergeMove: mail serves contacts' merge step behind the internal
// secret. A contact's emails are read through its addresses, so a contact
// merge gives the survivor the addresses it no longer has, and the merged
// contacts' aliases, once (a repeat adds none); a company merge has
// nothing in mail; a body no merge sends is refused whole.
func TestMergeMove(t *testing.T) {
	t.Parallel()
	e := newPrivacyEnv(t)
	for _, tc := range []struct {
		name string
		body mergeapi.Move
		want string
	}{
		{"contacts", mergeapi.Move{Object: mergeapi.Contact, Into: 5, Merged: []int64{6, 7}, Emails: []string{"Six@Example.org"}},
			`{"data":{"email_links":1}}`},
		{"contacts again", mergeapi.Move{Object: mergeapi.Contact, Into: 5, Merged: []int64{6, 7}, Emails: []string{"six@example.org"}},
			`{"data":{"email_links":0}}`},
		{"the survivor merged on", mergeapi.Move{Object: mergeapi.Contact, Into: 8, Merged: []int64{5}, Emails: []string{"five@example.org"}},
			`{"data":{"email_links":2}}`},
		{"companies", mergeapi.Move{Object: mergeapi.Company, Into: 5, Merged: []int64{6}}, `{"data":{}}`},
	} {
		r := e.internal(mergeapi.MovePath(3), internalSecret, tc.body)
		if r.status != http.StatusOK || string(r.body) != tc.want+"\n" {
			t.Errorf("%s: %d %s, want 200 %s", tc.name, r.status, r.body, tc.want)
		}
	}
	for contact, want := range map[int64][]string{5: nil, 8: {"five@example.org", "six@example.org"}} {
		got, err := e.store.Aliases(context.Background(), contact)
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("contact %d's aliases %v, %v; want %v", contact, got, err, want)
		}
	}
	r := e.internal(mergeapi.MovePath(3), internalSecret, map[string]any{"object": "contact", "into": 5, "merged": []int64{5, 6}})
	wantExact(t, r, http.StatusUnprocessableEntity, problemBody(422, "validation_failed", "one or more fields are invalid",
		map[string]any{"field": "merged[0]", "message": "must not be the survivor (into)"}))
	r = e.internal(mergeapi.MovePath(3), "", mergeapi.Move{Object: mergeapi.Contact, Into: 5, Merged: []int64{6}})
	wantExact(t, r, http.StatusUnauthorized, problemBody(401, "unauthenticated", "internal route"))
}
