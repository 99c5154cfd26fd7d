package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/opencrm/crm/pkg/contract/webhooksapi"
	"github.com/opencrm/crm/pkg/problem/problemtest"
	"github.com/opencrm/crm/services/webhooks/internal/delivery"
)

type sentEvent struct {
	ID        string          `json:"id"`
	Type      string          `json:"type"`
	CreatedAt string          `json:"created_at"`
	Data      json.RawMessage `json:"data"`
}

func verify(t *testing.T, secret string, h hit) {
	t.Helper()
	err := webhooksapi.Verify(secret, h.header.Get("webhook-id"), h.header.Get("webhook-timestamp"),
		h.header.Get("webhook-signature"), h.body, time.Now(), 5*time.Minute)
	if err != nil {
		t.Fatalf("signature with %s…: %v (headers %v)", secret[:10], err, h.header)
	}
}

func TestDeliverySignedAndLogged(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	rc := newReceiver(t, nil)
	h := e.create(rc.url(), "contact.created")
	other := newReceiver(t, nil)
	e.create(other.url(), "deal.updated")
	e.emit("contacts", "contact.created", "5", map[string]any{"id": 5, "first_name": "Ada"})
	e.emit("contacts", "contact.updated", "5", map[string]any{"id": 5})
	eventually(t, "the delivery", func() bool { return rc.count() == 1 })
	got := rc.got()[0]
	verify(t, h.Secret, got)
	for k, want := range map[string]string{"Content-Type": "application/json", "User-Agent": "OpenCRM-Webhooks/1", "webhook-id": "evt_1"} {
		if v := got.header.Get(k); v != want {
			t.Errorf("%s = %q, want %q", k, v, want)
		}
	}
	var ev sentEvent
	if err := json.Unmarshal(got.body, &ev); err != nil {
		t.Fatal(err)
	}
	if ev.ID != "evt_1" || ev.Type != "contact.created" || string(ev.Data) != `{"id":5,"first_name":"Ada"}` || ev.CreatedAt == "" {
		t.Fatalf("body %s", got.body)
	}
	eventually(t, "the log entry", func() bool {
		ds := e.deliveries(h.ID, "")
		return len(ds) == 1 && ds[0].Status == "delivered"
	})
	d := e.deliveries(h.ID, "")[0]
	if d.EventID != "evt_1" || d.Attempt != 1 || d.StatusCode == nil || *d.StatusCode != 204 || d.NextAt != nil {
		t.Fatalf("delivery %+v", d)
	}
	time.Sleep(100 * time.Millisecond)
	if other.count() != 0 {
		t.Fatal("a subscription got an event type it did not subscribe to")
	}
}

func TestFailedAttemptsAreRetriedAndLogged(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withDelivery(func(c *delivery.Config) { c.Timeout = 300 * time.Millisecond }))
	tests := []struct {
		name   string
		answer func(int, http.ResponseWriter, *http.Request)
		err    string
		code   int
		typ    string // one per case: the cases share the env
	}{
		{"500", func(_ int, w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(500)
			_, _ = w.Write([]byte(strings.Repeat("x", 5000)))
		}, "receiver answered 500", 500, "deal.updated"},
		{"timeout", func(_ int, w http.ResponseWriter, r *http.Request) {
			select {
			case <-r.Context().Done():
			case <-time.After(2 * time.Second):
			}
		}, "timeout", 0, "lead.updated"},
		{"connection closed", func(_ int, w http.ResponseWriter, _ *http.Request) {
			c, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				_ = c.Close()
			}
		}, "connection closed by the receiver", 0, "contact.updated"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rc := newReceiver(t, func(n int, w http.ResponseWriter, r *http.Request) {
				if n <= 2 {
					tt.answer(n, w, r)
					return
				}
				w.WriteHeader(200)
			})
			h := e.create(rc.url(), tt.typ)
			e.emit("deals", tt.typ, tt.name, map[string]any{"id": 1})
			eventually(t, "a first failed attempt in the log", func() bool {
				ds := e.deliveries(h.ID, "?status=pending")
				return len(ds) == 1 && ds[0].Attempt >= 1
			})
			d := e.deliveries(h.ID, "")[0]
			if d.Error == nil || *d.Error != tt.err || d.NextAt == nil {
				t.Fatalf("after a failure: %+v (error %v)", d, deref(d.Error))
			}
			if tt.code != 0 && (d.StatusCode == nil || *d.StatusCode != tt.code || d.Response == nil || len(*d.Response) != 4096) {
				t.Fatalf("status/body not kept (≤ 4 KB): %+v", d)
			}
			eventually(t, "delivered on the third attempt", func() bool {
				ds := e.deliveries(h.ID, "?status=delivered")
				return len(ds) == 1 && ds[0].Attempt == 3
			})
			ids := map[string]bool{}
			for _, x := range rc.got() {
				ids[x.header.Get("webhook-id")] = true
			}
			if len(ids) != 1 {
				t.Fatalf("webhook-id changed across attempts: %v", ids)
			}
		})
	}
}

func deref(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}

func TestTerminalOutcomes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	gone := newReceiver(t, status(http.StatusGone))
	g := e.create(gone.url(), "*")
	redirect := newReceiver(t, func(_ int, w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://127.0.0.1:1/elsewhere", http.StatusFound)
	})
	rd := e.create(redirect.url(), "*")
	e.emit("leads", "lead.created", "1", map[string]any{"id": 1})
	eventually(t, "both failed", func() bool {
		a, b := e.deliveries(g.ID, "?status=failed"), e.deliveries(rd.ID, "?status=failed")
		return len(a) == 1 && len(b) == 1
	})
	if d := e.deliveries(rd.ID, "")[0]; deref(d.Error) != "redirect not followed" || *d.StatusCode != 302 || d.Attempt != 1 {
		t.Fatalf("redirect: %+v", d)
	}
	if d := e.deliveries(g.ID, "")[0]; deref(d.Error) != "receiver answered 410 Gone" || *d.StatusCode != 410 {
		t.Fatalf("410: %+v", d)
	}
	sub := decode[record[hook]](t, e.do("GET", "/webhooks/"+strconv.FormatInt(g.ID, 10), e.admin, nil)).Data
	if sub.Active || deref(sub.DisabledReason) != "receiver answered 410 Gone" {
		t.Fatalf("410 did not disable: %+v", sub)
	}
	// Inactive: new events wait nowhere.
	e.emit("leads", "lead.created", "2", map[string]any{"id": 2})
	time.Sleep(100 * time.Millisecond)
	if n := len(e.deliveries(g.ID, "")); n != 1 || gone.count() != 1 {
		t.Fatalf("inactive subscription got %d deliveries, receiver %d requests", n, gone.count())
	}
	// Re-activating clears the reason.
	sub = decode[record[hook]](t, e.do("PUT", "/webhooks/"+strconv.FormatInt(g.ID, 10), e.admin, `{"active":true}`)).Data
	if !sub.Active || sub.DisabledReason != nil {
		t.Fatalf("re-enabled: %+v", sub)
	}
}

func TestPerRecordOrderUnderRetries(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var failed atomic.Bool
	rc := newReceiver(t, func(_ int, w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("webhook-id") == "evt_1" && !failed.Swap(true) {
			w.WriteHeader(503)
			return
		}
		w.WriteHeader(200)
	})
	e.create(rc.url(), "*")
	for i := range 3 {
		e.emit("contacts", "contact.updated", "42", map[string]any{"id": 42, "v": i})
	}
	e.emit("contacts", "contact.updated", "43", map[string]any{"id": 43})
	eventually(t, "all delivered", func() bool { return rc.count() == 5 })
	var order []string
	for _, h := range rc.got() {
		if id := h.header.Get("webhook-id"); id != "evt_4" {
			order = append(order, id)
		}
	}
	if strings.Join(order, ",") != "evt_1,evt_1,evt_2,evt_3" {
		t.Fatalf("record 42 received %v, want evt_1 (failed), evt_1, evt_2, evt_3", order)
	}
}

func TestDeadEndpointDoesNotDelayOthers(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withDelivery(func(c *delivery.Config) { c.Workers = 4; c.PerEndpoint = 2; c.Timeout = 2 * time.Second }))
	release := make(chan struct{})
	var inflight, peak atomic.Int32
	dead := newReceiver(t, func(_ int, w http.ResponseWriter, r *http.Request) {
		n := inflight.Add(1)
		defer inflight.Add(-1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		select {
		case <-release:
		case <-r.Context().Done():
		}
		w.WriteHeader(200)
	})
	defer close(release)
	live := newReceiver(t, nil)
	e.create(dead.url(), "*")
	e.create(live.url(), "*")
	start := time.Now()
	for i := range 10 {
		e.emit("deals", "deal.created", strconv.Itoa(i), map[string]any{"id": i})
	}
	eventually(t, "the live receiver got everything", func() bool { return live.count() == 10 })
	if took := time.Since(start); took > 2*time.Second {
		t.Fatalf("live receiver waited %v behind a dead one", took)
	}
	if p := peak.Load(); p < 1 || p > 2 {
		t.Fatalf("peak concurrent requests to one endpoint = %d, want at most the cap 2", p)
	}
}

func TestWorkerStoppedMidDeliveryDeliversAfterRestart(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withDelivery(func(c *delivery.Config) {
		c.Timeout = 5 * time.Second
		c.ShutdownWait = 200 * time.Millisecond
		c.StaleAfter = 6 * time.Second
	}))
	entered := make(chan struct{}, 1)
	rc := newReceiver(t, func(n int, w http.ResponseWriter, r *http.Request) {
		if n == 1 {
			entered <- struct{}{}
			<-r.Context().Done() // the sender goes away mid-request
			return
		}
		w.WriteHeader(200)
	})
	h := e.create(rc.url(), "*")
	e.emit("contacts", "contact.deleted", "9", map[string]any{"id": 9})
	select {
	case <-entered:
	case <-time.After(10 * time.Second):
		t.Fatal("no delivery started")
	}
	e.stop()
	if d := e.deliveries(h.ID, "")[0]; d.Status != "pending" || d.Attempt != 0 {
		t.Fatalf("an interrupted attempt was recorded: %+v", d)
	}
	e.engine = e.newEngine(prometheus.NewRegistry())
	e.start()
	eventually(t, "delivered after the restart", func() bool {
		ds := e.deliveries(h.ID, "?status=delivered")
		return len(ds) == 1
	})
	hits := rc.got()
	if len(hits) != 2 || hits[0].header.Get("webhook-id") != "evt_1" || hits[1].header.Get("webhook-id") != "evt_1" {
		t.Fatalf("receiver got %d requests", len(hits))
	}
	verify(t, h.Secret, hits[1])
}

func TestManualRetry(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	rc := newReceiver(t, func(_ int, w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/x", http.StatusMovedPermanently)
	})
	h := e.create(rc.url(), "*")
	e.emit("deals", "deal.deleted", "3", map[string]any{"id": 3})
	eventually(t, "failed", func() bool { return len(e.deliveries(h.ID, "?status=failed")) == 1 })
	d := e.deliveries(h.ID, "")[0]
	rc.setAnswer(status(200))
	base := "/webhooks/" + strconv.FormatInt(h.ID, 10) + "/deliveries/"
	r := e.do("POST", base+strconv.FormatInt(d.ID, 10)+"/retry", e.admin, nil)
	if r.status != 200 {
		t.Fatalf("retry: %d %s", r.status, r.body)
	}
	got := decode[record[delivered]](t, r).Data
	if got.Status != "pending" || got.NextAt == nil {
		t.Fatalf("after retry: %+v", got)
	}
	eventually(t, "delivered", func() bool { return len(e.deliveries(h.ID, "?status=delivered")) == 1 })

	other := e.create(rc.url(), "*")
	r = e.do("POST", "/webhooks/"+strconv.FormatInt(other.ID, 10)+"/deliveries/"+strconv.FormatInt(d.ID, 10)+"/retry", e.admin, nil)
	problemtest.Want(t, r.status, r.header, r.body, 404, "not_found")
	r = e.do("GET", "/webhooks/"+strconv.FormatInt(h.ID, 10)+"/deliveries?status=lost", e.admin, nil)
	problemtest.Want(t, r.status, r.header, r.body, 422, "validation_failed", "status")
}

func TestPing(t *testing.T) {
	t.Parallel()
	e := newEnv(t, noWorkers())
	rc := newReceiver(t, nil)
	h := e.create(rc.url(), "deal.created")
	r := e.do("POST", "/webhooks/"+strconv.FormatInt(h.ID, 10)+"/test", e.admin, nil)
	if r.status != 200 {
		t.Fatalf("test: %d %s", r.status, r.body)
	}
	d := decode[record[delivered]](t, r).Data
	if d.Status != "delivered" || d.EventType != "ping" || d.EventID != "ping_"+strconv.FormatInt(d.ID, 10) || d.Attempt != 1 {
		t.Fatalf("ping delivery %+v", d)
	}
	hits := rc.got()
	if len(hits) != 1 || hits[0].header.Get("webhook-id") != d.EventID {
		t.Fatalf("receiver got %d", len(hits))
	}
	verify(t, h.Secret, hits[0])

	// A failed ping is not retried.
	rc.setAnswer(status(500))
	d = decode[record[delivered]](t, e.do("POST", "/webhooks/"+strconv.FormatInt(h.ID, 10)+"/test", e.admin, nil)).Data
	if d.Status != "failed" || deref(d.Error) != "receiver answered 500" || d.NextAt != nil {
		t.Fatalf("failed ping %+v", d)
	}
}

func TestRotateSignsWithBothSecrets(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	rc := newReceiver(t, nil)
	h := e.create(rc.url(), "*")
	r := e.do("POST", "/webhooks/"+strconv.FormatInt(h.ID, 10)+"/rotate-secret", e.admin, nil)
	if r.status != 200 {
		t.Fatalf("rotate: %d %s", r.status, r.body)
	}
	rot := decode[record[hook]](t, r).Data
	if rot.Secret == "" || rot.Secret == h.Secret || rot.PreviousExp == nil || !strings.HasPrefix(rot.Secret, rot.SecretPrefix) {
		t.Fatalf("rotated %+v", rot)
	}
	exp, err := time.Parse(time.RFC3339Nano, *rot.PreviousExp)
	if err != nil || exp.Sub(time.Now()) < 23*time.Hour || exp.Sub(time.Now()) > 25*time.Hour {
		t.Fatalf("previous secret expires at %v", rot.PreviousExp)
	}
	e.emit("contacts", "company.created", "1", map[string]any{"id": 1})
	eventually(t, "delivered", func() bool { return rc.count() == 1 })
	got := rc.got()[0]
	if n := len(strings.Fields(got.header.Get("webhook-signature"))); n != 2 {
		t.Fatalf("%d signatures, want 2", n)
	}
	verify(t, h.Secret, got)
	verify(t, rot.Secret, got)
}

// TestRefusedAddressAtDelivery: a name that resolved to a public address
// when saved and answers loopback when delivering (plainly, or as the
// IPv4-translated ::ffff:0:127.0.0.1) is refused at dial time: the
// delivery fails with "address not allowed" and nothing reaches the
// receiver on 127.0.0.1.
func TestRefusedAddressAtDelivery(t *testing.T) {
	t.Parallel()
	for _, addr := range []string{"127.0.0.1", "::ffff:0:7f00:1"} {
		t.Run(addr, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, strict(), withDelivery(func(c *delivery.Config) { c.AllowPrivate = false }))
			rc := newReceiver(t, nil)
			e.dns.set("hooks.example.com", "93.184.216.34")
			port := rc.srv.URL[strings.LastIndex(rc.srv.URL, ":")+1:]
			h := e.create("https://hooks.example.com:"+port+"/hook", "*")
			e.dns.set("hooks.example.com", addr)
			e.emit("contacts", "contact.created", "1", map[string]any{"id": 1})
			eventually(t, "failed", func() bool { return len(e.deliveries(h.ID, "?status=failed")) == 1 })
			if d := e.deliveries(h.ID, "")[0]; deref(d.Error) != "address not allowed" || d.StatusCode != nil {
				t.Fatalf("delivery %+v (error %s)", d, deref(d.Error))
			}
			if rc.count() != 0 {
				t.Fatal("the receiver on 127.0.0.1 was reached")
			}
		})
	}
}

// TestLostTaskIsSweptAgain: the task of a queued delivery vanished from
// Redis (flushed, failed over); the sweeper enqueues it again.
func TestLostTaskIsSweptAgain(t *testing.T) {
	t.Parallel()
	e := newEnv(t, noWorkers())
	rc := newReceiver(t, nil)
	h := e.create(rc.url(), "*")
	e.emit("deals", "deal.created", "1", map[string]any{"id": 1})
	if n, err := e.engine.DispatchOnce(context.Background()); err != nil || n != 1 {
		t.Fatalf("dispatch = %d, %v", n, err)
	}
	ctx := context.Background()
	iter := e.rdb.Scan(ctx, 0, "asynq:{"+e.cfg.Queue+"}:*", 100).Iterator()
	for iter.Next(ctx) {
		e.rdb.Del(ctx, iter.Val())
	}
	e.start()
	eventually(t, "delivered by the sweeper", func() bool { return len(e.deliveries(h.ID, "?status=delivered")) == 1 })
	if rc.count() != 1 {
		t.Fatalf("receiver got %d", rc.count())
	}
}

// TestArchivedTaskIsReplaced: asynq gave up on an attempt's task (archived
// after its retries); the sweeper replaces it instead of being blocked by
// its id forever.
func TestArchivedTaskIsReplaced(t *testing.T) {
	t.Parallel()
	e := newEnv(t, noWorkers())
	rc := newReceiver(t, nil)
	h := e.create(rc.url(), "*")
	e.emit("deals", "deal.created", "1", map[string]any{"id": 1})
	if n, err := e.engine.DispatchOnce(context.Background()); err != nil || n != 1 {
		t.Fatalf("dispatch = %d, %v", n, err)
	}
	insp := asynq.NewInspectorFromRedisClient(e.rdb)
	if err := insp.ArchiveTask(e.cfg.Queue, delivery.TaskID(1)); err != nil {
		t.Fatal(err)
	}
	e.start()
	eventually(t, "delivered after the sweep", func() bool { return len(e.deliveries(h.ID, "?status=delivered")) == 1 })
	if rc.count() != 1 {
		t.Fatalf("receiver got %d", rc.count())
	}
}
