package api_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/opencrm/crm/services/webhooks/internal/delivery"
)

// attempt is one entry of a delivery's attempts as the log shows it.
type attempt struct {
	Attempt     int     `json:"attempt"`
	StatusCode  *int    `json:"status_code"`
	Error       *string `json:"error"`
	DurationMS  *int    `json:"duration_ms"`
	Response    *string `json:"response_body"`
	AttemptedAt *string `json:"attempted_at"`
}

// logged is a delivery with its attempts.
type logged struct {
	ID            int64     `json:"id"`
	Status        string    `json:"status"`
	Attempt       int       `json:"attempt"`
	StatusCode    *int      `json:"status_code"`
	DurationMS    *int      `json:"duration_ms"`
	Error         *string   `json:"error"`
	LastAttemptAt *string   `json:"last_attempt_at"`
	Attempts      []attempt `json:"attempts"`
}

func (e *env) logged(id int64, query string) []logged {
	e.t.Helper()
	r := e.do(http.MethodGet, "/webhooks/"+strconv.FormatInt(id, 10)+"/deliveries"+query, e.admin, nil)
	if r.status != http.StatusOK {
		e.t.Fatalf("deliveries: %d %s", r.status, r.body)
	}
	return decode[page[logged]](e.t, r).Data
}

// outcome is what an attempt says, less its time and duration.
type outcome struct {
	Attempt int
	Code    int // 0: no answer
	Error   string
	Body    string
}

func outcomes(as []attempt) []outcome {
	out := make([]outcome, len(as))
	for i, a := range as {
		out[i] = outcome{Attempt: a.Attempt, Error: deref(a.Error), Body: deref(a.Response)}
		if a.StatusCode != nil {
			out[i].Code = *a.StatusCode
		}
	}
	return out
}

// TestLogListsEveryAttempt: a receiver answering 500, then nothing in
// time, then 204: the log lists the three attempts, oldest first, each
// with its status, error, body, duration and time; the delivery's own
// fields are the last one's.
func TestLogListsEveryAttempt(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withDelivery(func(c *delivery.Config) { c.Timeout = 300 * time.Millisecond }))
	rc := newReceiver(t, func(n int, w http.ResponseWriter, r *http.Request) {
		switch n {
		case 1:
			time.Sleep(20 * time.Millisecond)
			w.WriteHeader(http.StatusInternalServerError)
			_, _ = w.Write([]byte("boom"))
		case 2:
			select {
			case <-r.Context().Done():
			case <-time.After(2 * time.Second):
			}
		default:
			w.WriteHeader(http.StatusNoContent)
		}
	})
	h := e.create(rc.url(), "*")
	e.emit("contacts", "contact.created", "1", map[string]any{"id": 1})
	eventually(t, "delivered", func() bool { return len(e.logged(h.ID, "?status=delivered")) == 1 })

	d := e.logged(h.ID, "")[0]
	want := []outcome{
		{Attempt: 1, Code: 500, Error: "receiver answered 500", Body: "boom"},
		{Attempt: 2, Error: "timeout", Body: "<nil>"},
		{Attempt: 3, Code: 204, Error: "<nil>", Body: "<nil>"},
	}
	if diff := cmp.Diff(want, outcomes(d.Attempts)); diff != "" {
		t.Fatalf("attempts (-want +got):\n%s", diff)
	}
	var prev time.Time
	for i, a := range d.Attempts {
		if a.DurationMS == nil || a.AttemptedAt == nil {
			t.Fatalf("attempt %d without duration or time: %+v", a.Attempt, a)
		}
		at, err := time.Parse(time.RFC3339Nano, *a.AttemptedAt)
		if err != nil || !at.After(prev) {
			t.Fatalf("attempt %d at %q, after %v", a.Attempt, *a.AttemptedAt, prev)
		}
		prev = at
		if sent := rc.got()[i].at; sent.Sub(at) < 0 || sent.Sub(at) > time.Second {
			t.Errorf("attempt %d attempted_at %v, the receiver got it at %v", a.Attempt, at, sent)
		}
	}
	if ms := *d.Attempts[0].DurationMS; ms < 20 {
		t.Errorf("the 500 took %d ms, the receiver waited 20", ms)
	}
	if ms := *d.Attempts[1].DurationMS; ms < 300 || ms > 1500 {
		t.Errorf("the timeout took %d ms, the timeout is 300", ms)
	}
	last := d.Attempts[len(d.Attempts)-1]
	if d.Attempt != 3 || d.StatusCode == nil || *d.StatusCode != 204 || d.Error != nil ||
		*d.DurationMS != *last.DurationMS || deref(d.LastAttemptAt) != deref(last.AttemptedAt) {
		t.Fatalf("the delivery's fields are not its latest attempt's: %+v, latest %+v", d, last)
	}
}

// TestAttemptsOfPingAndRetry: a ping's single attempt is logged, and so
// is a manual retry's; every delivery lists as many attempts as its
// attempt counter, and they go with it (a deleted subscription, the
// retention sweep).
func TestAttemptsOfPingAndRetry(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	rc := newReceiver(t, status(http.StatusBadRequest))
	h := e.create(rc.url(), "deal.created")
	r := e.do(http.MethodPost, "/webhooks/"+strconv.FormatInt(h.ID, 10)+"/test", e.admin, nil)
	ping := decode[record[logged]](t, r).Data
	if diff := cmp.Diff([]outcome{{Attempt: 1, Code: 400, Error: "receiver answered 400", Body: "<nil>"}}, outcomes(ping.Attempts)); diff != "" {
		t.Fatalf("ping's attempts (-want +got):\n%s", diff)
	}

	rc.setAnswer(status(http.StatusOK))
	e.emit("deals", "deal.created", "1", map[string]any{"id": 1})
	eventually(t, "delivered", func() bool { return len(e.logged(h.ID, "?status=delivered")) == 1 })
	d := e.logged(h.ID, "?status=delivered")[0]
	r = e.do(http.MethodPost, "/webhooks/"+strconv.FormatInt(h.ID, 10)+"/deliveries/"+strconv.FormatInt(d.ID, 10)+"/retry", e.admin, nil)
	if got := decode[record[logged]](t, r).Data; len(got.Attempts) != 1 {
		t.Fatalf("retry answered %d attempts, want the 1 so far", len(got.Attempts))
	}
	eventually(t, "retried", func() bool {
		ds := e.logged(h.ID, "?status=delivered")
		return len(ds) == 1 && len(ds[0].Attempts) == 2
	})
	want := []outcome{{Attempt: 1, Code: 200, Error: "<nil>", Body: "<nil>"}, {Attempt: 2, Code: 200, Error: "<nil>", Body: "<nil>"}}
	if diff := cmp.Diff(want, outcomes(e.logged(h.ID, "?status=delivered")[0].Attempts)); diff != "" {
		t.Fatalf("retried delivery's attempts (-want +got):\n%s", diff)
	}
	if n := e.mismatchedAttempts(); n != 0 {
		t.Fatalf("%d deliveries whose attempts do not match their counter", n)
	}

	other := e.create(rc.url(), "deal.created")
	e.emit("deals", "deal.created", "2", map[string]any{"id": 2})
	// Both attempts logged before counting them: h's second delivery
	// races other's.
	eventually(t, "delivered to both", func() bool {
		return len(e.logged(other.ID, "?status=delivered")) == 1 && len(e.logged(h.ID, "?status=delivered")) == 2
	})
	before := e.attemptRows()
	if r := e.do(http.MethodDelete, "/webhooks/"+strconv.FormatInt(other.ID, 10), e.admin, nil); r.status >= 300 {
		t.Fatalf("delete: %d %s", r.status, r.body)
	}
	if n := e.attemptRows(); n != before-1 {
		t.Fatalf("%d attempts after deleting a subscription with 1 of %d", n, before)
	}
	if err := e.store.Retention(context.Background(), 0); err != nil {
		t.Fatal(err)
	}
	if n := e.attemptRows(); n != 0 {
		t.Fatalf("%d attempts left after the retention sweep removed every delivery", n)
	}
}

// TestGivenBackListsNoAttempt: deliveries a batch gave back unattempted
// (it stopped at a dead endpoint) list no attempt, and an empty list, not
// null.
func TestGivenBackListsNoAttempt(t *testing.T) {
	t.Parallel()
	e := newEnv(t, noWorkers(), withDelivery(func(c *delivery.Config) { c.Schedule = []time.Duration{time.Hour} }))
	dead := httptest.NewServer(http.NotFoundHandler())
	url := dead.URL + "/hook"
	dead.Close()
	h := e.create(url, "*")
	for i := range 3 {
		e.emit("deals", "deal.created", strconv.Itoa(i), map[string]any{"id": i})
	}
	if n, err := e.engine.DispatchOnce(context.Background()); err != nil || n != 3 {
		t.Fatalf("dispatch = %d, %v", n, err)
	}
	e.start()
	eventually(t, "the batch recorded", func() bool {
		ds := e.logged(h.ID, "")
		return len(ds) == 3 && ds[2].Attempt == 1
	})
	r := e.do(http.MethodGet, "/webhooks/"+strconv.FormatInt(h.ID, 10)+"/deliveries", e.admin, nil)
	ds := decode[page[logged]](t, r).Data
	want := []outcome{{Attempt: 1, Error: "connection refused", Body: "<nil>"}}
	if diff := cmp.Diff(want, outcomes(ds[2].Attempts)); diff != "" {
		t.Fatalf("the attempted one (-want +got):\n%s", diff)
	}
	for _, d := range ds[:2] {
		if d.Attempts == nil || len(d.Attempts) != 0 {
			t.Fatalf("given back %d lists %v, want []", d.ID, d.Attempts)
		}
	}
	if !strings.Contains(string(r.body), `"attempts":[]`) {
		t.Fatalf("no empty attempts list in %s", r.body)
	}
	if n := e.mismatchedAttempts(); n != 0 {
		t.Fatalf("%d deliveries whose attempts do not match their counter", n)
	}
}

// attemptRows counts the attempts stored.
func (e *env) attemptRows() int {
	e.t.Helper()
	var n int
	if err := e.db.QueryRow(context.Background(), `SELECT count(*) FROM delivery_attempts`).Scan(&n); err != nil {
		e.t.Fatal(err)
	}
	return n
}

// mismatchedAttempts counts the deliveries whose attempts listed differ
// from their attempt counter.
func (e *env) mismatchedAttempts() int {
	e.t.Helper()
	var n int
	if err := e.db.QueryRow(context.Background(), `SELECT count(*) FROM deliveries d
		WHERE attempt <> (SELECT count(*) FROM delivery_attempts a WHERE a.delivery_id = d.id)`).Scan(&n); err != nil {
		e.t.Fatal(err)
	}
	return n
}
