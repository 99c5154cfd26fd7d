package api_test

import (
	"net/http"
	"testing"

	"github.com/opencrm/crm/pkg/contract/mergeapi"
)

// TestMergeMove: mail serves contacts' merge step behind the internal
// secret. It stores no link from a message to a contact (a contact's
// emails are read through its current address), so a contact merge
// moves no stored link and a company merge has nothing in mail; a repeat
// answers the same; a body no merge sends is refused whole.
func TestMergeMove(t *testing.T) {
	t.Parallel()
	e := newPrivacyEnv(t)
	for _, tc := range []struct {
		name string
		body mergeapi.Move
		want string
	}{
		{"contacts", mergeapi.Move{Object: mergeapi.Contact, Into: 5, Merged: []int64{6, 7}}, `{"data":{"email_links":0}}`},
		{"contacts again", mergeapi.Move{Object: mergeapi.Contact, Into: 5, Merged: []int64{6, 7}}, `{"data":{"email_links":0}}`},
		{"companies", mergeapi.Move{Object: mergeapi.Company, Into: 5, Merged: []int64{6}}, `{"data":{}}`},
	} {
		r := e.internal(mergeapi.MovePath(3), internalSecret, tc.body)
		if r.status != http.StatusOK || string(r.body) != tc.want+"\n" {
			t.Errorf("%s: %d %s, want 200 %s", tc.name, r.status, r.body, tc.want)
		}
	}
	r := e.internal(mergeapi.MovePath(3), internalSecret, map[string]any{"object": "contact", "into": 5, "merged": []int64{5, 6}})
	wantExact(t, r, http.StatusUnprocessableEntity, problemBody(422, "validation_failed", "one or more fields are invalid",
		map[string]any{"field": "merged[0]", "message": "must not be the survivor (into)"}))
	r = e.internal(mergeapi.MovePath(3), "", mergeapi.Move{Object: mergeapi.Contact, Into: 5, Merged: []int64{6}})
	wantExact(t, r, http.StatusUnauthorized, problemBody(401, "unauthenticated", "internal route"))
}
