package api_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"

	"github.com/opencrm/crm/pkg/contract/mergeapi"
)

// internalPost sends an /internal request with the cluster secret and the
// headers given in name, value pairs.
func (e *env) internalPost(path string, body string, headers ...string) resp {
	e.t.Helper()
	req := newRequest(http.MethodPost, path, body)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Internal-Token", secret)
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	return e.serve(req)
}

// pointAt sets a lead's contact and company as a qualification leaves
// them (recorded in history as the system's, with a request id).
func (e *env) pointAt(id int64, contact, company any) {
	e.t.Helper()
	err := e.db.InTx(context.Background(), func(tx pgx.Tx) error {
		if _, err := tx.Exec(context.Background(), `SELECT set_config('crm.actor', '{"type":"system"}', true),
				set_config('crm.via', 'qualification', true), set_config('crm.request_id', 'setup', true)`); err != nil {
			return err
		}
		_, err := tx.Exec(context.Background(), `UPDATE leads SET contact_id = $2, company_id = $3 WHERE id = $1`, id, contact, company)
		return err
	})
	if err != nil {
		e.t.Fatal(err)
	}
}

// leadUpdates lists the lead.updated events of lead id in the outbox as
// "contact_id company_id".
func (e *env) leadUpdates(t *testing.T, id int64) []string {
	t.Helper()
	rows, err := e.db.Query(context.Background(), `SELECT coalesce(payload->>'contact_id', '-') || ' ' || coalesce(payload->>'company_id', '-')
		FROM outbox WHERE type = 'lead.updated' AND aggregate_id = $1 ORDER BY id`, fmt.Sprint(id))
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

// TestMergeMovesLeads: a merge of contacts points the leads qualified into
// the merged contacts at the survivor, a merge of companies likewise for
// their companies; each moved lead is published as lead.updated and
// recorded in its history via merge for the merge's actor; a repeat moves
// nothing and answers 0.
func TestMergeMovesLeads(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a := e.createLead(map[string]any{"first_name": "A", "last_name": "One"})
	b := e.createLead(map[string]any{"first_name": "B", "last_name": "Two"})
	c := e.createLead(map[string]any{"first_name": "C", "last_name": "Three"})
	e.pointAt(a, 11, 21)
	e.pointAt(b, 12, 22)
	e.pointAt(c, 10, nil)
	actor := []string{"X-Crm-Actor", `{"type":"user","id":2,"name":"Ada Admin"}`}
	for _, tc := range []struct{ body, want string }{
		{`{"object":"contact","into":10,"merged":[11,12]}`, `{"data":{"leads":2}}`},
		{`{"object":"company","into":20,"merged":[21]}`, `{"data":{"leads":1}}`},
		{`{"object":"contact","into":10,"merged":[11,12]}`, `{"data":{"leads":0}}`},
		{`{"object":"company","into":20,"merged":[21]}`, `{"data":{"leads":0}}`},
	} {
		r := e.internalPost(mergeapi.MovePath(5), tc.body, actor...)
		if r.status != http.StatusOK || string(r.body) != tc.want+"\n" {
			t.Errorf("move %s: %d %s, want 200 %s", tc.body, r.status, r.body, tc.want)
		}
	}
	for _, tc := range []struct {
		id   int64
		want []string
	}{
		{a, []string{"10 21", "10 20"}},
		{b, []string{"10 22"}},
		{c, []string{}},
	} {
		if diff := cmp.Diff(tc.want, e.leadUpdates(t, tc.id)); diff != "" {
			t.Errorf("lead %d's lead.updated events (-want +got):\n%s", tc.id, diff)
		}
	}
	want := []string{"updated merge user:2(Ada Admin) company_id=21→20", "updated merge user:2(Ada Admin) contact_id=11→10"}
	if diff := cmp.Diff(want, e.history(t, a, e.admin)[:2]); diff != "" {
		t.Errorf("lead A's history (-want +got):\n%s", diff)
	}
}

// TestMergeMoveRefusals: a body no merge sends is refused whole with
// every field named, and the route needs the internal secret.
func TestMergeMoveRefusals(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	r := e.internalPost(mergeapi.MovePath(5), `{"object":"lead","into":0,"merged":[1,2,3,4,5,6,7,8,9,10,11]}`)
	wantExactProblem(t, r, problemJSON(422, "validation_failed", "one or more fields are invalid",
		[2]string{"object", "must be one of contact, company"}, [2]string{"into", "must be a positive integer"},
		[2]string{"merged", "must hold at most 10 ids"}))
	req := newRequest(http.MethodPost, mergeapi.MovePath(5), `{"object":"contact","into":1,"merged":[2]}`)
	req.Header.Set("Content-Type", "application/json")
	wantProblem(t, e.serve(req), http.StatusUnauthorized, "unauthenticated")
}

func newRequest(method, path, body string) *http.Request {
	req, err := http.NewRequest(method, path, strings.NewReader(body))
	if err != nil {
		panic(err)
	}
	return req
}
