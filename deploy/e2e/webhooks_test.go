package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/opencrm/crm/pkg/contract/webhooksapi"
)

// receiverHost is where the tests' webhook receivers listen: a loopback
// address of its own, which the stack's webhooks process is told to allow
// (WEBHOOKS_ALLOWED_CIDRS) while every other private and loopback address
// stays refused, so the same stack shows deliveries and refusals.
const receiverHost = "127.0.0.2"

// webhookEnv is what the stacks' webhooks processes are started with.
var webhookEnv = map[string]string{
	"WEBHOOKS_ALLOW_HTTP":    "true",
	"WEBHOOKS_ALLOWED_CIDRS": receiverHost + "/32",
	"WEBHOOKS_BLOCK_PRIVATE": "true",
	// A delivery whose worker died is sent again after this (default 2m).
	"WEBHOOKS_STALE_AFTER": "12s",
}

// received is one delivery as a receiver saw it.
type received struct {
	ID, Timestamp, Signature string
	Body                     []byte
	Event                    webhooksapi.Event
}

// receiver is a webhook endpoint: it records every delivery and answers
// with what answer returns (200 by default).
type receiver struct {
	t   *testing.T
	srv *httptest.Server
	mu  sync.Mutex
	got []received
	// answer decides the status of each delivery; it may block.
	answer func(r received) int
}

func newReceiver(t *testing.T) *receiver {
	t.Helper()
	l, err := net.Listen("tcp", receiverHost+":0")
	if err != nil {
		t.Fatal(err)
	}
	rc := &receiver{t: t}
	rc.srv = httptest.NewUnstartedServer(http.HandlerFunc(rc.serve))
	rc.srv.Listener.Close()
	rc.srv.Listener = l
	rc.srv.Start()
	t.Cleanup(rc.srv.Close)
	return rc
}

func (rc *receiver) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	d := received{ID: r.Header.Get(webhooksapi.HeaderID), Timestamp: r.Header.Get(webhooksapi.HeaderTimestamp),
		Signature: r.Header.Get(webhooksapi.HeaderSignature), Body: body}
	_ = json.Unmarshal(body, &d.Event)
	rc.mu.Lock()
	rc.got = append(rc.got, d)
	answer := rc.answer
	rc.mu.Unlock()
	status := http.StatusOK
	if answer != nil {
		status = answer(d)
	}
	w.WriteHeader(status)
}

func (rc *receiver) setAnswer(f func(received) int) {
	rc.mu.Lock()
	rc.answer = f
	rc.mu.Unlock()
}

// deliveries returns what arrived so far whose event matches keep.
func (rc *receiver) deliveries(keep func(received) bool) []received {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	var out []received
	for _, d := range rc.got {
		if keep == nil || keep(d) {
			out = append(out, d)
		}
	}
	return out
}

// recordID is the data.id of a delivered event.
func recordID(d received) int64 {
	var rec struct {
		ID int64 `json:"id"`
	}
	_ = json.Unmarshal(d.Event.Data, &rec)
	return rec.ID
}

// subscribe creates a webhook for url and events and returns its id and
// signing secret.
func subscribe(t *testing.T, c *Client, url string, events ...string) (int64, string) {
	t.Helper()
	r := must(t, http.StatusCreated)(c.Do("POST", "/webhooks", map[string]any{
		"url": url, "events": events, "description": "e2e " + t.Name()}))
	secret, _ := r.Data()["secret"].(string)
	if !strings.HasPrefix(secret, webhooksapi.SecretPrefix) || r.Header.Get("Location") == "" {
		t.Fatalf("create webhook: secret %q, Location %q", secret, r.Header.Get("Location"))
	}
	// Its receiver goes with the test: later changes must not pile up
	// retries for an address nobody listens on.
	t.Cleanup(func() { _, _ = c.Do("DELETE", fmt.Sprintf("/webhooks/%d", r.ID()), nil) })
	return r.ID(), secret
}

// verify checks a delivery's Standard Webhooks signature against secret.
func verify(t *testing.T, secret string, d received) {
	t.Helper()
	if err := webhooksapi.Verify(secret, d.ID, d.Timestamp, d.Signature, d.Body, time.Now(), 5*time.Minute); err != nil {
		t.Errorf("delivery %s (%s): %v", d.ID, d.Event.Type, err)
	}
	if d.ID != d.Event.ID {
		t.Errorf("webhook-id %q, body id %q", d.ID, d.Event.ID)
	}
}

// TestWebhooksDeliverEveryChange follows a contact from its creation
// through the gateway to signed deliveries at a receiver, in order, and
// finds the same events in the feed and the delivery log.
func TestWebhooksDeliverEveryChange(t *testing.T) {
	t.Parallel()
	adm := admin(t)
	rc := newReceiver(t)
	hook, secret := subscribe(t, adm, rc.srv.URL+"/hooks", "contact.created", "contact.updated", "contact.deleted")
	if r := must(t, http.StatusOK)(adm.Do("GET", fmt.Sprintf("/webhooks/%d", hook), nil)); r.Data()["secret"] != nil {
		t.Errorf("the secret is shown again: %s", r)
	}

	c := must(t, http.StatusCreated)(adm.Do("POST", "/contacts", map[string]any{"first_name": "Hook", "last_name": uniq("Delivery")}))
	must(t, http.StatusOK)(adm.Do("PUT", fmt.Sprintf("/contacts/%d", c.ID()), map[string]any{
		"first_name": "Hook", "last_name": c.Data()["last_name"], "job_title": "Receiver"}))
	must(t, http.StatusOK)(adm.Do("DELETE", fmt.Sprintf("/contacts/%d", c.ID()), nil))

	mine := func(d received) bool { return recordID(d) == c.ID() }
	var got []received
	eventually(t, "three deliveries", func() error {
		if got = rc.deliveries(mine); len(got) < 3 {
			return fmt.Errorf("%d deliveries", len(got))
		}
		return nil
	})
	var types []string
	for _, d := range got {
		verify(t, secret, d)
		types = append(types, d.Event.Type)
	}
	if want := []string{"contact.created", "contact.updated", "contact.deleted"}; !slices.Equal(types, want) {
		t.Fatalf("delivered %v, want %v in order", types, want)
	}
	if string(got[2].Event.Data) != fmt.Sprintf(`{"id":%d}`, c.ID()) {
		t.Errorf("a deletion carries its id only, got %s", got[2].Event.Data)
	}
	var created map[string]any
	_ = json.Unmarshal(got[0].Event.Data, &created)
	if created["last_name"] != c.Data()["last_name"] || created["created_at"] != c.Data()["created_at"] {
		t.Errorf("contact.created data %v, want the record the API answered %v", created, c.Data())
	}

	// The feed has the same events, with the same ids, oldest first.
	// Ids are evt_<n> with n increasing: start just before the first.
	var first int64
	if _, err := fmt.Sscanf(got[0].ID, "evt_%d", &first); err != nil {
		t.Fatalf("event id %q", got[0].ID)
	}
	feed := must(t, http.StatusOK)(adm.Do("GET", fmt.Sprintf("/events?after=evt_%d&type=contact.created,contact.updated,contact.deleted&limit=1000", first-1), nil))
	var ids []string
	for _, e := range feed.JSON["data"].([]any) {
		ev := e.(map[string]any)
		if id, _ := ev["data"].(map[string]any)["id"].(float64); int64(id) == c.ID() {
			ids = append(ids, ev["id"].(string))
		}
	}
	if want := []string{got[0].ID, got[1].ID, got[2].ID}; !slices.Equal(ids, want) {
		t.Errorf("feed ids %v, want the delivered %v", ids, want)
	}
	// Paging from the first event's id starts after it.
	after := must(t, http.StatusOK)(adm.Do("GET", "/events?after="+got[0].ID+"&limit=1&type=contact.updated,contact.deleted", nil))
	if first := after.JSON["data"].([]any); len(first) != 1 || first[0].(map[string]any)["id"] == got[0].ID {
		t.Errorf("after=%s: %s", got[0].ID, after)
	}

	log := must(t, http.StatusOK)(adm.Do("GET", fmt.Sprintf("/webhooks/%d/deliveries?status=delivered", hook), nil))
	if log.JSON["total"].(float64) < 3 {
		t.Errorf("delivery log: %s", log)
	}

	// A ping is sent at once and logged; it carries its own id.
	ping := must(t, http.StatusOK)(adm.Do("POST", fmt.Sprintf("/webhooks/%d/test", hook), nil))
	if ping.Data()["status"] != "delivered" || ping.Data()["event_type"] != "ping" {
		t.Fatalf("ping: %s", ping)
	}
	pings := rc.deliveries(func(d received) bool { return d.Event.Type == "ping" })
	if len(pings) != 1 || !strings.HasPrefix(pings[0].ID, "ping_") {
		t.Fatalf("pings received: %+v", pings)
	}
	verify(t, secret, pings[0])

	// After a rotation both secrets verify for a while.
	rot := must(t, http.StatusOK)(adm.Do("POST", fmt.Sprintf("/webhooks/%d/rotate-secret", hook), nil))
	newSecret, _ := rot.Data()["secret"].(string)
	if newSecret == "" || newSecret == secret || rot.Data()["previous_secret_expires_at"] == nil {
		t.Fatalf("rotate: %s", rot)
	}
	must(t, http.StatusOK)(adm.Do("POST", fmt.Sprintf("/webhooks/%d/test", hook), nil))
	pings = rc.deliveries(func(d received) bool { return d.Event.Type == "ping" })
	if len(pings) != 2 {
		t.Fatalf("%d pings", len(pings))
	}
	verify(t, secret, pings[1])
	verify(t, newSecret, pings[1])
}

// TestWebhookFailuresAreLoggedAndRetried: a receiver answering 500 leaves
// the delivery pending with the attempt in the log; a manual retry delivers
// it; a 410 deactivates the subscription.
func TestWebhookFailuresAreLoggedAndRetried(t *testing.T) {
	t.Parallel()
	adm := admin(t)
	rc := newReceiver(t)
	rc.setAnswer(func(received) int { return http.StatusInternalServerError })
	hook, secret := subscribe(t, adm, rc.srv.URL, "company.created")
	co := must(t, http.StatusCreated)(adm.Do("POST", "/companies", map[string]any{"name": uniq("Hooked Co ")}))

	// Other tests create companies too: find this company's event by the
	// webhook-id its first (refused) attempt carried.
	var evID string
	eventually(t, "the first attempt", func() error {
		mine := rc.deliveries(func(d received) bool { return recordID(d) == co.ID() })
		if len(mine) == 0 {
			return fmt.Errorf("not sent yet")
		}
		evID = mine[0].ID
		return nil
	})
	row := func(status string) (map[string]any, error) {
		q := fmt.Sprintf("/webhooks/%d/deliveries?per_page=100", hook)
		if status != "" {
			q += "&status=" + status
		}
		log := must(t, http.StatusOK)(adm.Do("GET", q, nil))
		for _, r := range log.JSON["data"].([]any) {
			if m := r.(map[string]any); m["event_id"] == evID {
				return m, nil
			}
		}
		return nil, fmt.Errorf("no %s delivery of %s in %s", status, evID, log)
	}
	var dl map[string]any
	eventually(t, "a failed attempt in the log", func() error {
		var err error
		if dl, err = row(""); err == nil && dl["attempt"].(float64) < 1 {
			err = fmt.Errorf("not attempted: %v", dl)
		}
		return err
	})
	if dl["status"] != "pending" || dl["status_code"] != float64(500) || dl["next_attempt_at"] == nil || dl["error"] == nil {
		t.Fatalf("after a 500: %v", dl)
	}
	rc.setAnswer(nil)
	retried := must(t, http.StatusOK)(adm.Do("POST", fmt.Sprintf("/webhooks/%d/deliveries/%d/retry", hook, int64(dl["id"].(float64))), nil))
	if retried.Data()["status"] != "pending" {
		t.Errorf("retry: %s", retried)
	}
	eventually(t, "delivered after the retry", func() error {
		_, err := row("delivered")
		return err
	})
	got := rc.deliveries(func(d received) bool { return recordID(d) == co.ID() })
	if len(got) < 2 || got[0].ID != got[len(got)-1].ID {
		t.Fatalf("attempts %+v: want the same webhook-id on each", got)
	}
	verify(t, secret, got[len(got)-1])

	// 404 for a delivery of another subscription.
	other, _ := subscribe(t, adm, rc.srv.URL, "deal.created")
	r := must(t, http.StatusNotFound)(adm.Do("POST", fmt.Sprintf("/webhooks/%d/deliveries/%d/retry", other, int64(dl["id"].(float64))), nil))
	wantProblemBody(t, r, http.StatusNotFound, "not_found", nil)

	// 410 Gone turns the subscription off.
	rc.setAnswer(func(received) int { return http.StatusGone })
	must(t, http.StatusCreated)(adm.Do("POST", "/companies", map[string]any{"name": uniq("Gone Co ")}))
	eventually(t, "deactivated by a 410", func() error {
		w := must(t, http.StatusOK)(adm.Do("GET", fmt.Sprintf("/webhooks/%d", hook), nil))
		if w.Data()["active"] != false || w.Data()["disabled_reason"] == nil {
			return fmt.Errorf("%s", w)
		}
		return nil
	})
}

// TestWebhookBadInput: every refused subscription answers 422 naming the
// field, through the gateway, and stores nothing.
func TestWebhookBadInput(t *testing.T) {
	t.Parallel()
	adm := admin(t)
	ok := "http://" + receiverHost + ":9/hook"
	tests := []struct {
		name   string
		body   map[string]any
		fields []string
	}{
		{"relative url", map[string]any{"url": "/hooks", "events": []string{"*"}}, []string{"url"}},
		{"ftp scheme", map[string]any{"url": "ftp://hooks.example.com/x", "events": []string{"*"}}, []string{"url"}},
		{"file scheme", map[string]any{"url": "file:///etc/passwd", "events": []string{"*"}}, []string{"url"}},
		{"gopher scheme", map[string]any{"url": "gopher://hooks.example.com/", "events": []string{"*"}}, []string{"url"}},
		{"userinfo", map[string]any{"url": "http://user:pw@" + receiverHost + ":9/", "events": []string{"*"}}, []string{"url"}},
		{"loopback", map[string]any{"url": "http://127.0.0.1:9/", "events": []string{"*"}}, []string{"url"}},
		{"private", map[string]any{"url": "http://10.0.0.1/", "events": []string{"*"}}, []string{"url"}},
		{"metadata", map[string]any{"url": "http://169.254.169.254/latest/meta-data/", "events": []string{"*"}}, []string{"url"}},
		{"ipv6 loopback", map[string]any{"url": "http://[::1]:9/", "events": []string{"*"}}, []string{"url"}},
		{"ipv4-mapped loopback", map[string]any{"url": "http://[::ffff:127.0.0.1]:9/", "events": []string{"*"}}, []string{"url"}},
		{"unknown event type", map[string]any{"url": ok, "events": []string{"contact.created", "contact.exploded"}}, []string{"events[1]"}},
		{"no events", map[string]any{"url": ok, "events": []string{}}, []string{"events"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := adm.Do("POST", "/webhooks", tc.body)
			if err != nil {
				t.Fatal(err)
			}
			wantProblemBody(t, r, http.StatusUnprocessableEntity, "validation_failed", tc.fields)
		})
	}
	refused := map[string]bool{}
	for _, tc := range tests {
		refused[tc.body["url"].(string)] = tc.body["url"] != ok
	}
	list := must(t, http.StatusOK)(adm.Do("GET", "/webhooks?per_page=100", nil))
	for _, w := range list.JSON["data"].([]any) {
		if u := w.(map[string]any)["url"].(string); refused[u] || u == ok {
			t.Errorf("a refused subscription was stored: %v", w)
		}
	}
}
