package api_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/opencrm/crm/pkg/contract/contactsapi"
)

// TestMergedEvents: a merge on contacts' stream (contact.merged,
// company.merged, data contactsapi.MergedEvent) becomes a feed item
// carrying the object merged besides the stream's ids, and a delivery to
// every subscription naming its type or "*" whose owner may read
// contacts: an admin's, and a token's holding contacts:read. A token
// without contacts:read may not subscribe to the types nor ask the feed
// for them (403 insufficient_scope naming contacts:read); its "*"
// subscription gets none of them and its feed shows none.
func TestMergedEvents(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	named, star, reader, narrow := newReceiver(t, nil), newReceiver(t, nil), newReceiver(t, nil), newReceiver(t, nil)
	namedHook := e.create(named.url(), "contact.merged")
	starHook := e.create(star.url(), "*")
	readerToken := e.tokenFor(611, "webhooks:write", "contacts:read")
	readerHook := e.createAs(readerToken, reader.url(), "contact.merged", "company.merged")
	leadsOnly := e.tokenFor(612, "webhooks:write", "leads:read", "deals:read", "contracts:read")
	narrowHook := e.createAs(leadsOnly, narrow.url(), "*")
	for _, typ := range []string{"contact.merged", "company.merged"} {
		r := e.do("POST", "/webhooks", leadsOnly, map[string]any{"url": narrow.url(), "events": []string{"lead.created", typ}})
		wantInsufficientScope(t, r, "contacts:read", "this access token lacks the contacts:read scope, which "+typ+" events need")
		r = e.do("GET", "/events?type="+typ, leadsOnly, nil)
		wantInsufficientScope(t, r, "contacts:read", "this access token lacks the contacts:read scope, which "+typ+" events need")
	}

	e.emit("contacts", contactsapi.EventContactMerged, "42", contactsapi.MergedEvent{MergeID: 3, Survivor: 42, Merged: []int64{57, 58}})
	e.emit("contacts", contactsapi.EventCompanyMerged, "7", contactsapi.MergedEvent{MergeID: 4, Survivor: 7, Merged: []int64{9}})
	e.emit("leads", "lead.created", "5", map[string]any{"id": 5})
	contactMerged := `{"merge_id":3,"survivor_id":42,"merged_ids":[57,58],"object":"contact"}`
	companyMerged := `{"merge_id":4,"survivor_id":7,"merged_ids":[9],"object":"company"}`

	feedOf := func(token string) map[string]any {
		t.Helper()
		r := e.do("GET", "/events", token, nil)
		if r.status != http.StatusOK {
			t.Fatalf("feed: %d %s", r.status, r.body)
		}
		out := map[string]any{}
		for _, ev := range decode[feed](t, r).Data {
			out[ev.ID+" "+ev.Type] = jsonValue(t, string(ev.Data))
		}
		return out
	}
	want := map[string]any{
		"evt_1 contact.merged": jsonValue(t, contactMerged),
		"evt_2 company.merged": jsonValue(t, companyMerged),
		"evt_3 lead.created":   jsonValue(t, `{"id":5}`),
	}
	if diff := cmp.Diff(want, feedOf(e.admin)); diff != "" {
		t.Errorf("admin's feed (-want +got):\n%s", diff)
	}
	delete(want, "evt_3 lead.created")
	if diff := cmp.Diff(want, feedOf(e.tokenFor(613, "webhooks:read", "contacts:read"))); diff != "" {
		t.Errorf("a contacts:read token's feed (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]any{"evt_3 lead.created": jsonValue(t, `{"id":5}`)}, feedOf(leadsOnly)); diff != "" {
		t.Errorf("a token without contacts:read: feed (-want +got):\n%s", diff)
	}

	eventually(t, "the deliveries", func() bool {
		return named.count() == 1 && star.count() == 3 && reader.count() == 2 && narrow.count() == 1
	})
	time.Sleep(200 * time.Millisecond) // nothing more arrives
	received := func(rc *receiver, secret string) []string {
		t.Helper()
		var out []string
		for _, h := range rc.got() {
			verify(t, secret, h)
			var ev struct {
				sentEvent
				SchemaVersion int `json:"schema_version"`
			}
			if err := json.Unmarshal(h.body, &ev); err != nil {
				t.Fatal(err)
			}
			if ev.ID != h.header.Get("webhook-id") || ev.SchemaVersion != 1 {
				t.Errorf("delivered %s with webhook-id %s", h.body, h.header.Get("webhook-id"))
			}
			var data any
			if err := json.Unmarshal(ev.Data, &data); err != nil {
				t.Fatal(err)
			}
			b, _ := json.Marshal(data) // keys sorted
			out = append(out, ev.ID+" "+ev.Type+" "+string(b))
		}
		slices.Sort(out)
		return out
	}
	sorted := func(s string) string { b, _ := json.Marshal(jsonValue(t, s)); return string(b) }
	cm := "evt_1 contact.merged " + sorted(contactMerged)
	co := "evt_2 company.merged " + sorted(companyMerged)
	lc := "evt_3 lead.created " + sorted(`{"id":5}`)
	for _, tc := range []struct {
		name   string
		rc     *receiver
		hookID int64
		secret string
		want   []string
	}{
		{"admin's subscription to contact.merged", named, namedHook.ID, namedHook.Secret, []string{cm}},
		{"admin's * subscription", star, starHook.ID, starHook.Secret, []string{cm, co, lc}},
		{"contacts:read token's subscription to both", reader, readerHook.ID, readerHook.Secret, []string{cm, co}},
		{"* subscription of a token without contacts:read", narrow, narrowHook.ID, narrowHook.Secret, []string{lc}},
	} {
		if diff := cmp.Diff(tc.want, received(tc.rc, tc.secret)); diff != "" {
			t.Errorf("%s: received (-want +got):\n%s", tc.name, diff)
		}
		var log []string
		for _, d := range e.deliveries(tc.hookID, "") {
			log = append(log, d.EventID+" "+d.EventType+" "+d.Status)
		}
		slices.Sort(log)
		var wantLog []string
		for _, w := range tc.want {
			f := strings.Fields(w)
			wantLog = append(wantLog, f[0]+" "+f[1]+" delivered")
		}
		if diff := cmp.Diff(wantLog, log); diff != "" {
			t.Errorf("%s: delivery log (-want +got):\n%s", tc.name, diff)
		}
	}
}
