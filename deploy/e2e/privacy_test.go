package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// receipt is an erasure's receipt of one context, as the API answers it.
type receipt struct {
	Context  string           `json:"context"`
	Status   string           `json:"status"`
	Erased   map[string]int64 `json:"erased"`
	Redacted map[string]int64 `json:"redacted"`
	Kept     []struct {
		Object string `json:"object"`
		ID     int64  `json:"id"`
		Reason string `json:"reason"`
	} `json:"kept"`
}

type erasureAnswer struct {
	Data struct {
		ID       int64     `json:"id"`
		Status   string    `json:"status"`
		Reason   string    `json:"reason"`
		Receipts []receipt `json:"receipts"`
	} `json:"data"`
}

// privacyContexts are the contexts a request visits, in phase order.
var privacyContexts = []string{"contacts", "leads", "deals", "mail", "intake", "contracts", "webhooks"}

// waitPrivacy polls a privacy request's GET until its status is
// completed (a context that was down is asked again within 30 s).
func waitPrivacy(t *testing.T, c *Client, path string, timeout time.Duration) *Response {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		r := must(t, http.StatusOK)(c.Do("GET", path, nil))
		if r.Data()["status"] == "completed" {
			return r
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not completed after %s: %s\nidentity log:\n%s", path, timeout, r, stack.Logs("identity"))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func decodeErasure(t *testing.T, r *Response) erasureAnswer {
	t.Helper()
	var out erasureAnswer
	if err := json.Unmarshal(r.Body, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// receiptsOf are an erasure's receipts by context, each context once, in
// phase order.
func receiptsOf(t *testing.T, e erasureAnswer) map[string]receipt {
	t.Helper()
	var names []string
	out := map[string]receipt{}
	for _, r := range e.Data.Receipts {
		names = append(names, r.Context)
		out[r.Context] = r
	}
	if diff := cmp.Diff(privacyContexts, names); diff != "" {
		t.Fatalf("receipts' contexts (-want +got):\n%s", diff)
	}
	return out
}

// TestPrivacyExportAndErasure: a person with a contact (and a note), a
// lead (and a note) and a deal of their contact, found by their address
// in any case: the export's document holds them; the erasure deletes the
// contact and the lead, unlinks the deal, redacts their history, deletes
// the export, answers a receipt per context, and a second request for the
// address answers the same erasure; the audit log names the erasure, not
// the address.
func TestPrivacyExportAndErasure(t *testing.T) {
	t.Parallel()
	adm := admin(t)
	email := uniq("pia.person") + "@Privacy.test"
	lower := strings.ToLower(email)
	contact := must(t, http.StatusCreated)(adm.Do("POST", "/contacts", map[string]any{
		"first_name": "Pia", "last_name": "Person", "email": email}))
	must(t, http.StatusCreated)(adm.Do("POST", fmt.Sprintf("/contacts/%d/notes", contact.ID()),
		map[string]any{"content": "Pia prefers phone calls"}))
	lead := must(t, http.StatusCreated)(adm.Do("POST", "/leads", map[string]any{
		"first_name": "Pia", "last_name": "Person", "email": strings.ToUpper(email)}))
	must(t, http.StatusCreated)(adm.Do("POST", fmt.Sprintf("/leads/%d/notes", lead.ID()),
		map[string]any{"content": "asked for a quote"}))
	deal := must(t, http.StatusCreated)(adm.Do("POST", "/deals", map[string]any{
		"title": "Q3 renewal", "contact_id": contact.ID()}))
	// A message they exchanged with a salesperson (kept, their address
	// redacted: the salesperson is not one of the CRM's mailboxes).
	msg := must(t, http.StatusCreated)(adm.Do("POST", "/emails", map[string]any{
		"message_id": "<" + uniq("msg") + "@privacy.test>", "from": email, "to": []string{"sam@privacy.test"},
		"subject": "Quote", "body_text": "Please call me, " + email}))
	// Someone else, who must stay.
	other := must(t, http.StatusCreated)(adm.Do("POST", "/contacts", map[string]any{
		"first_name": "Otto", "last_name": "Other", "email": uniq("otto") + "@privacy.test"}))

	// The events feed has the person's records before the erasure runs
	// (an event ingested after it would not be redacted: see
	// feedHolds).
	eventually(t, "the person's events in the feed", func() error {
		if n := feedHolds(t, adm, "contact.created,lead.created", lower); n < 2 {
			return fmt.Errorf("%d of the person's events in the feed, want 2", n)
		}
		return nil
	})

	// The export.
	x := must(t, http.StatusAccepted)(adm.Do("POST", "/privacy/exports", map[string]any{"email": lower}))
	if x.Data()["status"] != "pending" || x.JSON["message"] != "export started" {
		t.Fatalf("export: %s", x)
	}
	done := waitPrivacy(t, adm, fmt.Sprintf("/privacy/exports/%d", x.ID()), 60*time.Second)
	var doc struct {
		Data struct {
			Document struct {
				Email    string `json:"email"`
				Contexts map[string]struct {
					Contacts []struct {
						ID int64 `json:"id"`
					} `json:"contacts"`
					Leads []struct {
						ID int64 `json:"id"`
					} `json:"leads"`
					Deals []struct {
						ID int64 `json:"id"`
					} `json:"deals"`
					Notes []struct {
						Content string `json:"content"`
					} `json:"notes"`
				} `json:"contexts"`
			} `json:"document"`
		} `json:"data"`
	}
	if err := json.Unmarshal(done.Body, &doc); err != nil {
		t.Fatal(err)
	}
	d := doc.Data.Document
	got := map[string]any{"email": d.Email, "contexts": len(d.Contexts)}
	if cs := d.Contexts["contacts"].Contacts; len(cs) == 1 {
		got["contact"] = cs[0].ID
	}
	if ls := d.Contexts["leads"].Leads; len(ls) == 1 {
		got["lead"] = ls[0].ID
	}
	if ds := d.Contexts["deals"].Deals; len(ds) == 1 {
		got["deal"] = ds[0].ID
	}
	for _, c := range []string{"contacts", "leads"} {
		for _, n := range d.Contexts[c].Notes {
			got[c+" note"] = n.Content
		}
	}
	want := map[string]any{"email": lower, "contexts": len(privacyContexts), "contact": contact.ID(), "lead": lead.ID(),
		"deal": deal.ID(), "contacts note": "Pia prefers phone calls", "leads note": "asked for a quote"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("export document (-want +got):\n%s\n%s", diff, done.Body)
	}

	// The erasure.
	e := must(t, http.StatusAccepted)(adm.Do("POST", "/privacy/erasures", map[string]any{"email": email, "reason": "GDPR Art. 17"}))
	if e.Data()["status"] != "pending" || e.JSON["message"] != "erasure started" {
		t.Fatalf("erasure: %s", e)
	}
	erasure := decodeErasure(t, waitPrivacy(t, adm, fmt.Sprintf("/privacy/erasures/%d", e.ID()), 60*time.Second))
	receipts := receiptsOf(t, erasure)
	for _, r := range receipts {
		if r.Status != "completed" {
			t.Errorf("%s's receipt is %s", r.Context, r.Status)
		}
	}
	checks := []struct {
		context, kind string
		redacted      bool
		want          int64
	}{
		{"contacts", "contacts", false, 1}, {"contacts", "notes", false, 1},
		{"leads", "leads", false, 1}, {"leads", "notes", false, 1},
		{"deals", "deals", true, 1},
	}
	for _, c := range checks {
		m := receipts[c.context].Erased
		if c.redacted {
			m = receipts[c.context].Redacted
		}
		if m[c.kind] != c.want {
			t.Errorf("%s's receipt: %s %s = %d, want %d (%+v)", c.context, map[bool]string{true: "redacted", false: "erased"}[c.redacted],
				c.kind, m[c.kind], c.want, receipts[c.context])
		}
	}
	if erasure.Data.Reason != "GDPR Art. 17" {
		t.Errorf("reason %q", erasure.Data.Reason)
	}

	// Nothing of the person is readable any more.
	must(t, http.StatusNotFound)(adm.Do("GET", fmt.Sprintf("/contacts/%d", contact.ID()), nil))
	must(t, http.StatusNotFound)(adm.Do("GET", fmt.Sprintf("/leads/%d", lead.ID()), nil))
	must(t, http.StatusOK)(adm.Do("GET", fmt.Sprintf("/contacts/%d", other.ID()), nil))
	dr := must(t, http.StatusOK)(adm.Do("GET", fmt.Sprintf("/deals/%d", deal.ID()), nil))
	if dr.Data()["contact_id"] != nil {
		t.Errorf("the deal still names the contact: %s", dr)
	}
	for path, owner := range map[string]string{
		fmt.Sprintf("/history?object=contact&id=%d", contact.ID()): "contacts",
		fmt.Sprintf("/history?object=lead&id=%d", lead.ID()):       "leads",
		fmt.Sprintf("/deals/%d/history", deal.ID()):                "deals",
		fmt.Sprintf("/contacts?search=%s", lower[:12]):             "contacts",
		fmt.Sprintf("/leads?search=%s", lower[:12]):                "leads",
		"/contacts/export":                  "contacts",
		"/leads/export":                     "leads",
		fmt.Sprintf("/emails/%d", msg.ID()): "mail",
		fmt.Sprintf("/contacts/%d/linked-emails", other.ID()): "mail",
	} {
		r, err := adm.Do("GET", path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if r.Status != http.StatusOK {
			t.Errorf("%s: %s\n%s's log:\n%s", path, r, owner, stack.Logs(owner))
			continue
		}
		body := strings.ToLower(string(r.Body))
		for _, held := range []string{lower, "pia", "prefers phone calls"} {
			if strings.Contains(body, held) {
				t.Errorf("%s still shows %q: %s", path, held, r.Body)
			}
		}
	}
	if n := feedHolds(t, adm, "contact.created,lead.created,contact.deleted,lead.deleted,deal.updated", lower); n > 0 {
		t.Errorf("%d events of the feed still carry the address", n)
	}
	must(t, http.StatusNotFound)(adm.Do("GET", fmt.Sprintf("/privacy/exports/%d", x.ID()), nil))

	// The same person again: the same erasure.
	again := must(t, http.StatusAccepted)(adm.Do("POST", "/privacy/erasures", map[string]any{"email": strings.ToUpper(email), "reason": "asked again"}))
	if again.ID() != e.ID() || again.Data()["status"] != "completed" {
		t.Errorf("second request: %s, want erasure %d completed", again, e.ID())
	}

	// The audit log: requested and erased, by the admin, without the address.
	for _, action := range []string{"person.erasure_requested", "person.erased", "person.export_requested"} {
		r := must(t, http.StatusOK)(adm.Do("GET", "/audit-log?action="+action, nil))
		if strings.Contains(strings.ToLower(string(r.Body)), lower) {
			t.Errorf("%s entries carry the address: %s", action, r.Body)
		}
		var page struct {
			Data []struct {
				Target struct {
					ID string `json:"id"`
				} `json:"target"`
				Actor struct {
					Type string `json:"type"`
				} `json:"actor"`
			} `json:"data"`
		}
		if err := json.Unmarshal(r.Body, &page); err != nil {
			t.Fatal(err)
		}
		id := e.ID()
		if action == "person.export_requested" {
			id = x.ID()
		}
		found := false
		for _, en := range page.Data {
			found = found || (en.Target.ID == fmt.Sprint(id) && en.Actor.Type == "user")
		}
		if !found {
			t.Errorf("no %s entry for %d by the admin: %s", action, id, r.Body)
		}
	}
}

// feedHolds pages through the events feed's events of types and counts
// those whose text holds s (case-insensitively).
func feedHolds(t *testing.T, c *Client, types, s string) int {
	t.Helper()
	n, after := 0, ""
	for range 100 {
		path := "/events?limit=1000&type=" + types
		if after != "" {
			path += "&after=" + after
		}
		r := must(t, http.StatusOK)(c.Do("GET", path, nil))
		var page struct {
			Data      []json.RawMessage `json:"data"`
			HasMore   bool              `json:"has_more"`
			NextAfter *string           `json:"next_after"`
		}
		if err := json.Unmarshal(r.Body, &page); err != nil {
			t.Fatal(err)
		}
		for _, ev := range page.Data {
			if strings.Contains(strings.ToLower(string(ev)), s) {
				n++
			}
		}
		if !page.HasMore || page.NextAfter == nil {
			return n
		}
		after = *page.NextAfter
	}
	t.Fatalf("the events feed has more than 100 pages")
	return n
}

// TestPrivacyNobody: an address held nowhere is erased all the same: 202,
// then completed with a receipt of zeros from every context.
func TestPrivacyNobody(t *testing.T) {
	t.Parallel()
	adm := admin(t)
	e := must(t, http.StatusAccepted)(adm.Do("POST", "/privacy/erasures", map[string]any{"email": uniq("nobody") + "@privacy.test", "reason": "asked by phone"}))
	erasure := decodeErasure(t, waitPrivacy(t, adm, fmt.Sprintf("/privacy/erasures/%d", e.ID()), 60*time.Second))
	for name, r := range receiptsOf(t, erasure) {
		if r.Status != "completed" || len(r.Kept) != 0 {
			t.Errorf("%s: %+v", name, r)
		}
		for kind, n := range r.Erased {
			if n != 0 {
				t.Errorf("%s erased %d %s of nobody", name, n, kind)
			}
		}
		for kind, n := range r.Redacted {
			if n != 0 {
				t.Errorf("%s redacted %d %s of nobody", name, n, kind)
			}
		}
	}
}

// TestPrivacyBadRequests: the refusals through the gateway, exactly: an
// address that is none (422 naming email), a person without the admin
// role (403), an unknown request (404).
func TestPrivacyBadRequests(t *testing.T) {
	t.Parallel()
	adm := admin(t)
	userEmail := uniq("privacy-user") + "@e2e.test"
	must(t, http.StatusCreated)(adm.Do("POST", "/users", map[string]any{
		"name": "Privacy User", "email": userEmail, "password": "correct horse battery", "role": "user"}))
	tok, err := stack.Client().Login(userEmail, "correct horse battery")
	if err != nil {
		t.Fatal(err)
	}
	user := stack.Client().With(tok)
	type body = map[string]any
	invalid := func(field, msg string) body {
		return body{"type": "/docs/problems#validation_failed", "title": "Unprocessable Entity", "status": float64(422),
			"code": "validation_failed", "detail": "one or more fields are invalid",
			"errors": []any{body{"field": field, "message": msg}}}
	}
	tests := []struct {
		name   string
		c      *Client
		method string
		path   string
		in     any
		status int
		want   body
	}{
		{"export without email", adm, "POST", "/privacy/exports", body{}, 422, invalid("email", "is required")},
		{"erasure not an email", adm, "POST", "/privacy/erasures", body{"email": "pia", "reason": "asked"}, 422, invalid("email", "must be a valid email address")},
		{"erasure without reason", adm, "POST", "/privacy/erasures", body{"email": "pia@privacy.test", "reason": " "}, 422, invalid("reason", "is required")},
		{"erasure as a user", user, "POST", "/privacy/erasures", body{"email": "pia@privacy.test", "reason": "asked"}, 403,
			body{"type": "/docs/problems#forbidden", "title": "Forbidden", "status": float64(403), "code": "forbidden",
				"detail": "this action requires the admin role"}},
		{"unknown erasure", adm, "GET", "/privacy/erasures/99999999", nil, 404,
			body{"type": "/docs/problems#not_found", "title": "Not Found", "status": float64(404), "code": "not_found",
				"detail": "erasure not found"}},
		{"unknown export", adm, "GET", "/privacy/exports/99999999", nil, 404,
			body{"type": "/docs/problems#not_found", "title": "Not Found", "status": float64(404), "code": "not_found",
				"detail": "export not found"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := must(t, tc.status)(tc.c.Do(tc.method, tc.path, tc.in))
			got := map[string]any{}
			for k, v := range r.JSON {
				if k != "request_id" {
					got[k] = v
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestPrivacyErasureOutlivesAKilledContext: mail is killed (SIGKILL)
// while a person's erasure runs: the erasure waits in its second phase,
// refusing an export of the person meanwhile (409); identity restarts;
// the erasure completes once mail is back, with mail's receipt.
func TestPrivacyErasureOutlivesAKilledContext(t *testing.T) {
	ctx := context.Background()
	adm := admin(t)
	email := uniq("killed") + "@privacy.test"
	contact := must(t, http.StatusCreated)(adm.Do("POST", "/contacts", map[string]any{
		"first_name": "Kim", "last_name": "Killed", "email": email}))

	stack.Stop("mail", true)
	restarted := false
	restart := func() {
		if restarted {
			return
		}
		restarted = true
		if err := stack.StartProcess(ctx, "mail"); err != nil {
			t.Fatal(err)
		}
		if err := stack.WaitReady(ctx, "mail"); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(restart)

	e := must(t, http.StatusAccepted)(adm.Do("POST", "/privacy/erasures", map[string]any{"email": email, "reason": "asked in writing"}))
	path := fmt.Sprintf("/privacy/erasures/%d", e.ID())
	eventually(t, "the first phase answered", func() error {
		r := receiptsOf(t, decodeErasure(t, must(t, http.StatusOK)(adm.Do("GET", path, nil))))
		if r["contacts"].Status != "completed" || r["leads"].Status != "completed" {
			return fmt.Errorf("phase 1: %+v", r)
		}
		if r["deals"].Status != "completed" || r["intake"].Status != "completed" {
			return fmt.Errorf("phase 2 without mail: %+v", r)
		}
		return nil
	})
	time.Sleep(2 * time.Second) // a retry or two while mail is down
	r := decodeErasure(t, must(t, http.StatusOK)(adm.Do("GET", path, nil)))
	receipts := receiptsOf(t, r)
	if r.Data.Status != "running" || receipts["mail"].Status != "pending" || receipts["contracts"].Status != "pending" {
		t.Fatalf("with mail down: %+v", r.Data)
	}
	if receipts["contacts"].Erased["contacts"] != 1 {
		t.Errorf("contacts' receipt %+v", receipts["contacts"])
	}
	must(t, http.StatusNotFound)(adm.Do("GET", fmt.Sprintf("/contacts/%d", contact.ID()), nil))
	busy := must(t, http.StatusConflict)(adm.Do("POST", "/privacy/exports", map[string]any{"email": strings.ToUpper(email)}))
	if busy.JSON["code"] != "erasure_running" ||
		busy.JSON["detail"] != "an erasure of this person is running; export after it completed" {
		t.Errorf("export during the erasure: %s", busy)
	}

	// Identity itself restarts meanwhile: the erasure is in its database,
	// and the new process's runner takes it up.
	if err := stack.Restart(ctx, "identity"); err != nil {
		t.Fatal(err)
	}
	restart()
	done := decodeErasure(t, waitPrivacy(t, adm, path, 90*time.Second))
	for name, rc := range receiptsOf(t, done) {
		if rc.Status != "completed" {
			t.Errorf("%s: %+v", name, rc)
		}
	}
	// An export after the erasure runs, and finds nothing of the person.
	x := must(t, http.StatusAccepted)(adm.Do("POST", "/privacy/exports", map[string]any{"email": email}))
	doc := waitPrivacy(t, adm, fmt.Sprintf("/privacy/exports/%d", x.ID()), 60*time.Second)
	if strings.Contains(string(doc.Body), "Killed") {
		t.Errorf("the export after the erasure found the person: %s", doc.Body)
	}
}
