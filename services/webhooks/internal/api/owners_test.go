package api_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/google/go-cmp/cmp"

	"github.com/opencrm/crm/pkg/auth"
	"github.com/opencrm/crm/pkg/problem"
	"github.com/opencrm/crm/pkg/problem/problemtest"
)

// tokenFor signs the access token of an integration token whose service
// user is sub.
func (e *env) tokenFor(sub int64, scopes ...string) string {
	now := time.Now()
	return e.issuer.Sign(e.t, auth.Claims{
		RegisteredClaims: jwt.RegisteredClaims{
			Issuer: auth.Issuer, Audience: jwt.ClaimStrings{auth.Audience}, Subject: strconv.FormatInt(sub, 10),
			IssuedAt: jwt.NewNumericDate(now), ExpiresAt: jwt.NewNumericDate(now.Add(15 * time.Minute)),
		},
		Role: auth.RoleUser, Scopes: scopes,
	})
}

// createAs creates a webhook to url for events with token, which must
// succeed.
func (e *env) createAs(token, url string, events ...string) hook {
	e.t.Helper()
	r := e.do(http.MethodPost, "/webhooks", token, map[string]any{"url": url, "events": events})
	if r.status != http.StatusCreated {
		e.t.Fatalf("create: %d %s", r.status, r.body)
	}
	return decode[record[hook]](e.t, r).Data
}

// wantProblem asserts the whole problem+json answer: status, media type
// and every member, the request id only present.
func wantProblem(t *testing.T, r result, status int, code, detail string) {
	t.Helper()
	got := problemtest.Want(t, r.status, r.header, r.body, status, code)
	if got.RequestID == "" {
		t.Errorf("no request_id in %s", r.body)
	}
	got.RequestID = ""
	want := problem.Body{Type: problem.TypeURI(code), Title: http.StatusText(status), Status: status, Code: code, Detail: detail}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("problem (-want +got):\n%s", diff)
	}
}

// wantInsufficientScope asserts the 403 of a token lacking scope, with
// its WWW-Authenticate challenge.
func wantInsufficientScope(t *testing.T, r result, scope, detail string) {
	t.Helper()
	wantProblem(t, r, http.StatusForbidden, "insufficient_scope", detail)
	if got, want := r.header.Get("WWW-Authenticate"), `Bearer error="insufficient_scope", scope="`+scope+`"`; got != want {
		t.Errorf("WWW-Authenticate = %q, want %q", got, want)
	}
}

func hookPath(id int64, rest string) string { return "/webhooks/" + strconv.FormatInt(id, 10) + rest }

// fingerprintOf is what a receiver computes to match secret_fingerprint:
// the first 16 hex digits of the SHA-256 of the whole secret.
func fingerprintOf(secret string) *string {
	sum := sha256.Sum256([]byte(secret))
	fp := hex.EncodeToString(sum[:])[:16]
	return &fp
}

// TestTokensManageOnlyTheirOwn: a token with webhooks:write sees, changes,
// re-targets, rotates, pings, retries and reads the log of its own
// subscriptions only; another owner's (an admin's, another token's)
// answer 404 exactly as a missing one and stay unchanged, and its list
// holds its own. An admin person manages every one.
func TestTokensManageOnlyTheirOwn(t *testing.T) {
	t.Parallel()
	e := newEnv(t, noWorkers())
	rc := newReceiver(t, nil)
	mine, other := e.tokenFor(501, "webhooks:write"), e.tokenFor(502, "webhooks:write")
	adminHook := e.create(rc.url(), "*")
	otherHook := e.createAs(other, rc.url(), "*")
	own := e.createAs(mine, rc.url(), "*")
	// A delivery in the admin's log, with the receiver's answer in it.
	if r := e.do(http.MethodPost, hookPath(adminHook.ID, "/test"), e.admin, nil); r.status != http.StatusOK {
		t.Fatalf("admin ping: %d %s", r.status, r.body)
	}
	ping := e.deliveries(adminHook.ID, "")[0]

	for _, theirs := range []hook{adminHook, otherHook} {
		for _, tt := range []struct {
			method, path string
			body         any
		}{
			{"GET", hookPath(theirs.ID, ""), nil},
			{"PUT", hookPath(theirs.ID, ""), `{"url":"http://127.0.0.1:1/stolen"}`},
			{"DELETE", hookPath(theirs.ID, ""), nil},
			{"POST", hookPath(theirs.ID, "/rotate-secret"), nil},
			{"POST", hookPath(theirs.ID, "/test"), nil},
			{"GET", hookPath(theirs.ID, "/deliveries"), nil},
			{"POST", hookPath(theirs.ID, "/deliveries/"+strconv.FormatInt(ping.ID, 10)+"/retry"), nil},
		} {
			t.Run(tt.method+" "+tt.path, func(t *testing.T) {
				wantProblem(t, e.do(tt.method, tt.path, mine, tt.body), http.StatusNotFound, "not_found", "webhook not found")
			})
		}
		after := decode[record[hook]](t, e.do("GET", hookPath(theirs.ID, ""), e.admin, nil)).Data
		if after.URL != rc.url() || after.PreviousExp != nil {
			t.Errorf("another owner's webhook changed by a token: %+v", after)
		}
	}
	if n := len(e.deliveries(adminHook.ID, "")); n != 1 {
		t.Errorf("admin's log has %d deliveries after the token's attempts, want 1", n)
	}

	list := decode[page[hook]](t, e.do("GET", "/webhooks", mine, nil))
	if list.Total != 1 || len(list.Data) != 1 || list.Data[0].ID != own.ID {
		t.Errorf("token's list %+v, want only webhook %d", list, own.ID)
	}
	for _, tt := range []struct {
		method, path string
		body         any
		status       int
	}{
		{"GET", hookPath(own.ID, ""), nil, 200},
		{"PUT", hookPath(own.ID, ""), `{"url":"http://127.0.0.1:1/moved"}`, 200},
		{"POST", hookPath(own.ID, "/rotate-secret"), nil, 200},
		{"POST", hookPath(own.ID, "/test"), nil, 200},
		{"GET", hookPath(own.ID, "/deliveries"), nil, 200},
	} {
		if r := e.do(tt.method, tt.path, mine, tt.body); r.status != tt.status {
			t.Errorf("%s %s on its own: %d %s", tt.method, tt.path, r.status, r.body)
		}
	}

	all := decode[page[hook]](t, e.do("GET", "/webhooks", e.admin, nil))
	if all.Total != 3 {
		t.Errorf("admin's list has %d webhooks, want 3", all.Total)
	}
	if r := e.do("PUT", hookPath(otherHook.ID, ""), e.admin, `{"description":"seen by the admin"}`); r.status != 200 {
		t.Errorf("admin updates a token's webhook: %d %s", r.status, r.body)
	}
	if r := e.do("DELETE", hookPath(own.ID, ""), mine, nil); r.status != 200 {
		t.Errorf("token deletes its own: %d %s", r.status, r.body)
	}
}

// TestFeedShowsOnlyReadableTypes: the feed gives a token only the event
// types whose records its scopes let it read (write implies read; company
// events belong to contacts); asking for another type is 403
// insufficient_scope; an admin person sees every type.
func TestFeedShowsOnlyReadableTypes(t *testing.T) {
	t.Parallel()
	e := newEnv(t, noWorkers())
	for i, typ := range []string{"contact.created", "lead.created", "deal.updated", "contract.executed", "company.updated", "lead.qualified"} {
		e.emit("x", typ, strconv.Itoa(i), map[string]any{"n": i})
	}
	types := func(token, query string) []string {
		t.Helper()
		r := e.do("GET", "/events"+query, token, nil)
		if r.status != http.StatusOK {
			t.Fatalf("feed%s: %d %s", query, r.status, r.body)
		}
		got := []string{}
		for _, ev := range decode[feed](t, r).Data {
			got = append(got, ev.ID+" "+ev.Type)
		}
		return got
	}
	tests := []struct {
		name, token, query string
		want               []string
	}{
		{"webhooks:read alone reads nothing", e.tokenFor(501, "webhooks:read"), "", []string{}},
		{"contacts and deals", e.tokenFor(501, "webhooks:read", "contacts:read", "deals:write"), "",
			[]string{"evt_1 contact.created", "evt_3 deal.updated", "evt_5 company.updated"}},
		{"leads, a page of one", e.tokenFor(501, "webhooks:write", "leads:write"), "?limit=1&after=evt_2", []string{"evt_6 lead.qualified"}},
		{"a readable type asked for", e.tokenFor(501, "webhooks:read", "deals:read"), "?type=deal.updated", []string{"evt_3 deal.updated"}},
		{"admin", e.admin, "", []string{"evt_1 contact.created", "evt_2 lead.created", "evt_3 deal.updated",
			"evt_4 contract.executed", "evt_5 company.updated", "evt_6 lead.qualified"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, types(tt.token, tt.query)); diff != "" {
				t.Errorf("feed (-want +got):\n%s", diff)
			}
		})
	}
	r := e.do("GET", "/events?type=deal.updated,contract.executed", e.tokenFor(501, "webhooks:read", "deals:read"), nil)
	wantInsufficientScope(t, r, "contracts:read", "this access token lacks the contracts:read scope, which contract.executed events need")
	r = e.do("GET", "/events?type=lead.created", e.tokenFor(501, "webhooks:read"), nil)
	wantInsufficientScope(t, r, "leads:read", "this access token lacks the leads:read scope, which lead.created events need")
}

// TestSubscriptionsReceiveOnlyReadableTypes: a token may not subscribe to
// a type whose records it may not read (on create and update, nothing
// stored or changed; an admin may not widen a token's subscription
// either), and its "*" subscription gets deliveries of the readable types
// only, while an admin's "*" gets all.
func TestSubscriptionsReceiveOnlyReadableTypes(t *testing.T) {
	t.Parallel()
	e := newEnv(t, noWorkers())
	rc := newReceiver(t, nil)
	bare := e.tokenFor(501, "webhooks:write")
	contacts := e.tokenFor(502, "webhooks:write", "contacts:write")

	r := e.do("POST", "/webhooks", bare, map[string]any{"url": rc.url(), "events": []string{"contact.created"}})
	wantInsufficientScope(t, r, "contacts:read", "this access token lacks the contacts:read scope, which contact.created events need")
	r = e.do("POST", "/webhooks", contacts, map[string]any{"url": rc.url(), "events": []string{"company.created", "lead.created"}})
	wantInsufficientScope(t, r, "leads:read", "this access token lacks the leads:read scope, which lead.created events need")
	if n := decode[page[hook]](t, e.do("GET", "/webhooks", e.admin, nil)).Total; n != 0 {
		t.Fatalf("%d webhooks stored after refused creates", n)
	}

	star := e.createAs(contacts, rc.url(), "*")
	exact := e.createAs(contacts, rc.url(), "company.updated")
	nothing := e.createAs(bare, rc.url(), "*") // receives pings only
	adminStar := e.create(rc.url(), "*")

	r = e.do("PUT", hookPath(exact.ID, ""), contacts, `{"events":["deal.created"],"description":"widened"}`)
	wantInsufficientScope(t, r, "deals:read", "this access token lacks the deals:read scope, which deal.created events need")
	r = e.do("PUT", hookPath(exact.ID, ""), e.admin, `{"events":["contract.executed"]}`)
	wantInsufficientScope(t, r, "contracts:read",
		"the access token owning this subscription lacks the contracts:read scope, which contract.executed events need")
	got := decode[record[hook]](t, e.do("GET", hookPath(exact.ID, ""), contacts, nil)).Data
	if diff := cmp.Diff([]string{"company.updated"}, got.Events); diff != "" || got.Description != "" {
		t.Errorf("refused updates changed the webhook: %+v", got)
	}
	if r := e.do("PUT", hookPath(exact.ID, ""), e.admin, `{"events":["contact.deleted","company.updated"]}`); r.status != http.StatusOK {
		t.Errorf("admin sets readable types on a token's webhook: %d %s", r.status, r.body)
	}

	for i, typ := range []string{"contact.created", "lead.created", "deal.updated", "company.updated", "contract.executed"} {
		e.emit("x", typ, strconv.Itoa(i), map[string]any{"n": i})
	}
	logged := func(id int64, token string) []string {
		r := e.do("GET", hookPath(id, "/deliveries?sort_dir=asc"), token, nil)
		if r.status != http.StatusOK {
			t.Fatalf("deliveries: %d %s", r.status, r.body)
		}
		out := []string{}
		for _, d := range decode[page[delivered]](t, r).Data {
			out = append(out, d.EventType)
		}
		return out
	}
	for _, tt := range []struct {
		name  string
		id    int64
		token string
		want  []string
	}{
		{"token with contacts:write, *", star.ID, contacts, []string{"contact.created", "company.updated"}},
		{"token with contacts:write, exact", exact.ID, contacts, []string{"company.updated"}},
		{"token without record scopes, *", nothing.ID, bare, []string{}},
		{"admin, *", adminStar.ID, e.admin, []string{"contact.created", "lead.created", "deal.updated", "company.updated", "contract.executed"}},
	} {
		if diff := cmp.Diff(tt.want, logged(tt.id, tt.token)); diff != "" {
			t.Errorf("%s: deliveries (-want +got):\n%s", tt.name, diff)
		}
	}
}

// TestSubscriptionsPerOwnerCapped: an owner may have 25 subscriptions (the
// default); the next is 409 conflict and stores nothing, concurrent
// creates at the edge store exactly up to the cap, other owners are not
// affected, and deleting one makes room.
func TestSubscriptionsPerOwnerCapped(t *testing.T) {
	t.Parallel()
	e := newEnv(t, noWorkers())
	tok := e.tokenFor(501, "webhooks:write")
	body := map[string]any{"url": "http://127.0.0.1:1/x", "events": []string{"*"}}
	var first hook
	for i := range 22 {
		h := e.createAs(tok, "http://127.0.0.1:1/x", "*")
		if i == 0 {
			first = h
		}
	}
	statuses := make([]int, 6)
	var wg sync.WaitGroup
	for i := range statuses {
		wg.Go(func() { statuses[i] = e.do("POST", "/webhooks", tok, body).status })
	}
	wg.Wait()
	created := 0
	for _, s := range statuses {
		switch s {
		case http.StatusCreated:
			created++
		case http.StatusConflict:
		default:
			t.Errorf("concurrent create answered %d", s)
		}
	}
	if created != 3 {
		t.Errorf("%d of 6 concurrent creates at 22 of 25 succeeded, want 3", created)
	}
	if n := decode[page[hook]](t, e.do("GET", "/webhooks", tok, nil)).Total; n != 25 {
		t.Fatalf("token owns %d webhooks, want 25", n)
	}
	wantProblem(t, e.do("POST", "/webhooks", tok, body), http.StatusConflict, "conflict",
		"an owner may have at most 25 subscriptions; delete one first")
	if n := decode[page[hook]](t, e.do("GET", "/webhooks", tok, nil)).Total; n != 25 {
		t.Fatalf("a refused create stored one: %d", n)
	}
	e.createAs(e.tokenFor(502, "webhooks:write"), "http://127.0.0.1:1/x", "*")
	e.create("http://127.0.0.1:1/x", "*")
	if r := e.do("DELETE", hookPath(first.ID, ""), tok, nil); r.status != http.StatusOK {
		t.Fatalf("delete: %d %s", r.status, r.body)
	}
	e.createAs(tok, "http://127.0.0.1:1/x", "*")
}

// TestSecretFingerprint: reads show a fingerprint of the secret (a SHA-256
// prefix a receiver can compute), never its first characters; rotation
// changes it; secret_prefix stays, holding the scheme only.
func TestSecretFingerprint(t *testing.T) {
	t.Parallel()
	e := newEnv(t, noWorkers())
	type shown struct {
		Secret      string  `json:"secret"`
		Prefix      string  `json:"secret_prefix"`
		Fingerprint *string `json:"secret_fingerprint"`
	}
	r := e.do("POST", "/webhooks", e.admin, map[string]any{"url": "http://127.0.0.1:1/x", "events": []string{"*"}})
	created := decode[record[shown]](t, r).Data
	h := decode[record[hook]](t, r).Data
	got := decode[record[shown]](t, e.do("GET", hookPath(h.ID, ""), e.admin, nil)).Data
	want := shown{Prefix: "whsec_", Fingerprint: fingerprintOf(created.Secret)}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("read (-want +got):\n%s", diff)
	}
	rot := decode[record[shown]](t, e.do("POST", hookPath(h.ID, "/rotate-secret"), e.admin, nil)).Data
	list := decode[page[shown]](t, e.do("GET", "/webhooks", e.admin, nil)).Data
	want = shown{Prefix: "whsec_", Fingerprint: fingerprintOf(rot.Secret)}
	if diff := cmp.Diff([]shown{want}, list); diff != "" || rot.Secret == created.Secret {
		t.Errorf("list after rotation (-want +got):\n%s", diff)
	}
}

// TestBackfillFingerprints: rows an earlier version made (no fingerprint,
// 8 characters of key in secret_prefix) get the fingerprint of their
// secret and lose the key material; one whose secret cannot be opened
// loses the key material and is counted.
func TestBackfillFingerprints(t *testing.T) {
	t.Parallel()
	e := newEnv(t, noWorkers())
	ctx := context.Background()
	secret := "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSwAAAAAAAAAAA="
	sealed, err := e.box.Seal([]byte(secret))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.db.Exec(ctx, `INSERT INTO subscriptions (url, events, secret, secret_prefix) VALUES
		('https://a.example/', '{*}', $1, 'whsec_MfKQ9r8G'), ('https://b.example/', '{*}', '\x0102', 'whsec_zzzzzzzz')`, sealed); err != nil {
		t.Fatal(err)
	}
	filled, failed, err := e.store.BackfillFingerprints(ctx, e.box.Open)
	if err != nil || filled != 1 || failed != 1 {
		t.Fatalf("backfill = %d filled, %d failed, %v; want 1, 1", filled, failed, err)
	}
	type row struct {
		Prefix      string
		Fingerprint *string
	}
	var got []row
	rows, err := e.db.Query(ctx, `SELECT secret_prefix, secret_fingerprint FROM subscriptions ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var r row
		if err := rows.Scan(&r.Prefix, &r.Fingerprint); err != nil {
			t.Fatal(err)
		}
		got = append(got, r)
	}
	want := []row{{"whsec_", fingerprintOf(secret)}, {"whsec_", nil}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("rows after the backfill (-want +got):\n%s", diff)
	}
	if filled, failed, err := e.store.BackfillFingerprints(ctx, e.box.Open); err != nil || filled != 0 || failed != 1 {
		t.Errorf("second backfill = %d, %d, %v; want 0, 1", filled, failed, err)
	}
}
