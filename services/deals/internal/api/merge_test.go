package api_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/opencrm/crm/pkg/contract/mergeapi"
)

// moved posts a merge's move and answers the body of its 200.
func (e *env) moved(t *testing.T, m mergeapi.Move) string {
	t.Helper()
	r := e.internal(http.MethodPost, mergeapi.MovePath(77), m, "X-Crm-Actor", `{"type":"user","id":1,"name":"Ada Admin"}`)
	if r.Status != http.StatusOK {
		t.Fatalf("move %+v: %d %s", m, r.Status, r.Body)
	}
	return string(r.Body)
}

// updates lists the deal.updated events of deal id in the outbox as
// "contact_id company_id company_name".
func (e *env) updates(t *testing.T, id int64) []string {
	t.Helper()
	rows, err := e.db.Query(context.Background(), `SELECT coalesce(payload->>'contact_id', '-') || ' ' ||
			coalesce(payload->>'company_id', '-') || ' ' || coalesce(payload->>'company_name', '-')
		FROM outbox WHERE stream = 'crm:events:deals' AND type = 'deal.updated' AND aggregate_id = $1 ORDER BY id`, fmt.Sprint(id))
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := []string{}
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	return out
}

// TestMergeMovesDeals: a merge of contacts points the merged contacts'
// deals at the survivor, a merge of companies their companies' deals
// (with the survivor's name from contacts), each moved deal published as
// deal.updated and recorded in its history via merge for the actor the
// merge names; a repeat moves nothing, publishes nothing and answers 0.
func TestMergeMovesDeals(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a := e.createDeal(map[string]any{"title": "A", "contact_id": 501, "company_id": 101})
	b := e.createDeal(map[string]any{"title": "B", "contact_id": 500, "company_id": 100})
	c := e.createDeal(map[string]any{"title": "C", "contact_id": 501})
	d := e.createDeal(map[string]any{"title": "D"})

	contact := mergeapi.Move{Object: mergeapi.Contact, Into: 500, Merged: []int64{501, 502}}
	if got := e.moved(t, contact); got != `{"data":{"deals":2}}`+"\n" {
		t.Errorf("contacts' move answered %s", got)
	}
	company := mergeapi.Move{Object: mergeapi.Company, Into: 100, Merged: []int64{101}}
	if got := e.moved(t, company); got != `{"data":{"deals":1}}`+"\n" {
		t.Errorf("companies' move answered %s", got)
	}
	// Repeats (the saga lost an answer) find nothing left.
	for _, m := range []mergeapi.Move{contact, company} {
		if got := e.moved(t, m); got != `{"data":{"deals":0}}`+"\n" {
			t.Errorf("repeated %s move answered %s", m.Object, got)
		}
	}

	for _, tc := range []struct {
		id      int64
		updates []string
	}{
		{a.ID, []string{"500 101 Globex", "500 100 Acme"}},
		{b.ID, []string{}},
		{c.ID, []string{"500 - -"}},
		{d.ID, []string{}},
	} {
		if diff := cmp.Diff(tc.updates, e.updates(t, tc.id)); diff != "" {
			t.Errorf("deal %d's deal.updated events (-want +got):\n%s", tc.id, diff)
		}
	}
	var got dealJSON
	e.data(e.do(http.MethodGet, path("/deals/%d", a.ID), e.user, nil), http.StatusOK, &got)
	if *got.ContactID != 500 || *got.CompanyID != 100 || *got.CompanyName != "Acme" {
		t.Errorf("deal A reads contact %v company %v %q", *got.ContactID, *got.CompanyID, *got.CompanyName)
	}
	want := []string{
		// The copied company name is not history (as on every write).
		`updated merge user:1 company_id=101→100`,
		`updated merge user:1 contact_id=501→500`,
	}
	if diff := cmp.Diff(want, e.history(t, a.ID, e.user)[:2]); diff != "" {
		t.Errorf("deal A's history (-want +got):\n%s", diff)
	}
	if h := e.history(t, c.ID, e.user); h[0] != `updated merge user:1 contact_id=501→500` {
		t.Errorf("deal C's newest entry %q", h[0])
	}
}

// TestMergeMoveKeepsNamesOfAnUnknownSurvivor: a company survivor contacts
// does not know moves the deals and keeps the names they show.
func TestMergeMoveKeepsNamesOfAnUnknownSurvivor(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a := e.createDeal(map[string]any{"title": "A", "company_id": 101})
	if got := e.moved(t, mergeapi.Move{Object: mergeapi.Company, Into: 999, Merged: []int64{101}}); got != `{"data":{"deals":1}}`+"\n" {
		t.Errorf("move answered %s", got)
	}
	if diff := cmp.Diff([]string{"- 999 Globex"}, e.updates(t, a.ID)); diff != "" {
		t.Errorf("deal.updated events (-want +got):\n%s", diff)
	}
}

// TestMergeMoveFailsWhileContactsIsDown: a company move needs the
// survivor's name; contacts being down fails it (503) with nothing moved,
// so the merge retries it. A contact move does not read contacts.
func TestMergeMoveFailsWhileContactsIsDown(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpt{contactsDown: true})
	r := e.internal(http.MethodPost, mergeapi.MovePath(1), mergeapi.Move{Object: mergeapi.Company, Into: 100, Merged: []int64{101}})
	wantProblem(t, r, http.StatusServiceUnavailable, "upstream_unavailable")
	if got := e.moved(t, mergeapi.Move{Object: mergeapi.Contact, Into: 500, Merged: []int64{501}}); got != `{"data":{"deals":0}}`+"\n" {
		t.Errorf("contact move answered %s", got)
	}
}

// TestMergeMoveRefusals: a body no merge sends is refused whole, and the
// route needs the internal secret.
func TestMergeMoveRefusals(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	r := e.internal(http.MethodPost, mergeapi.MovePath(1), map[string]any{"object": "deal", "into": 3, "merged": []int64{3}})
	wantBody(t, r, http.StatusUnprocessableEntity, `{"type":"/docs/problems#validation_failed","title":"Unprocessable Entity","status":422,`+
		`"detail":"one or more fields are invalid","code":"validation_failed","request_id":"…",`+
		`"errors":[{"field":"object","message":"must be one of contact, company"},{"field":"merged[0]","message":"must not be the survivor (into)"}]}`+"\n")
	wantProblem(t, e.do(http.MethodPost, mergeapi.MovePath(1), e.admin, mergeapi.Move{Object: "contact", Into: 1, Merged: []int64{2}}),
		http.StatusUnauthorized, "unauthenticated")
}
