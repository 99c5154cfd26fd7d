package api_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/hibiken/asynq"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/opencrm/crm/services/webhooks/internal/delivery"
)

// row is a delivery as the tests of batches read it from the table.
type row struct {
	ID, Attempt int
	Status      string
	Queued      bool
	Error       string
	Next        time.Time
}

func (e *env) rows(subID int64) []row {
	e.t.Helper()
	rs, err := e.store.DB().Query(context.Background(), `SELECT id, attempt, status,
			EXISTS (SELECT 1 FROM batches b WHERE d.id = ANY(b.deliveries)), coalesce(error, ''), next_attempt_at
		FROM deliveries d WHERE subscription_id = $1 ORDER BY id`, subID)
	if err != nil {
		e.t.Fatal(err)
	}
	defer rs.Close()
	var out []row
	for rs.Next() {
		var r row
		if err := rs.Scan(&r.ID, &r.Attempt, &r.Status, &r.Queued, &r.Error, &r.Next); err != nil {
			e.t.Fatal(err)
		}
		out = append(out, r)
	}
	return out
}

// pendingTasks is how many tasks wait in the env's queue.
func (e *env) pendingTasks() int {
	e.t.Helper()
	ts, err := asynq.NewInspectorFromRedisClient(e.rdb).ListPendingTasks(e.cfg.Queue)
	if err != nil {
		e.t.Fatal(err)
	}
	return len(ts)
}

func ids(hits []hit) []string {
	var out []string
	for _, h := range hits {
		out = append(out, h.header.Get("webhook-id"))
	}
	return out
}

// TestBatchInDueOrderKeepsRecordOrder: many deliveries to one endpoint go
// out as one task, oldest first; a record's later change waits for the
// next batch.
func TestBatchInDueOrderKeepsRecordOrder(t *testing.T) {
	t.Parallel()
	e := newEnv(t, noWorkers())
	rc := newReceiver(t, nil)
	e.create(rc.url(), "*")
	for i := range 30 {
		e.emit("contacts", "contact.updated", strconv.Itoa(i%20), map[string]any{"id": i % 20, "v": i})
	}
	if n, err := e.engine.DispatchOnce(context.Background()); err != nil || n != 20 {
		t.Fatalf("dispatch = %d, %v; want the 20 record heads", n, err)
	}
	if n := e.pendingTasks(); n != 1 {
		t.Fatalf("%d tasks for one batch", n)
	}
	e.start()
	eventually(t, "all delivered", func() bool { return rc.count() == 30 })
	var want []string
	for i := range 30 {
		want = append(want, "evt_"+strconv.Itoa(i+1))
	}
	if diff := cmp.Diff(want, ids(rc.got())); diff != "" {
		t.Fatalf("order (-want +got):\n%s", diff)
	}
}

// TestDeadEndpointCostsOneAttemptPerBatch: a refused connection breaks the
// batch; the rest are given back unattempted and wait the failed one's
// backoff together.
func TestDeadEndpointCostsOneAttemptPerBatch(t *testing.T) {
	t.Parallel()
	e := newEnv(t, noWorkers(), withDelivery(func(c *delivery.Config) { c.Schedule = []time.Duration{time.Hour} }))
	dead := httptest.NewServer(http.NotFoundHandler())
	url := dead.URL + "/hook"
	dead.Close()
	h := e.create(url, "*")
	live := newReceiver(t, nil)
	e.create(live.url(), "*")
	for i := range 5 {
		e.emit("deals", "deal.created", strconv.Itoa(i), map[string]any{"id": i})
	}
	if n, err := e.engine.DispatchOnce(context.Background()); err != nil || n != 10 {
		t.Fatalf("dispatch = %d, %v", n, err)
	}
	e.start()
	eventually(t, "the dead endpoint's batch recorded", func() bool {
		rs := e.rows(h.ID)
		return len(rs) == 5 && !rs[0].Queued && rs[0].Attempt == 1
	})
	eventually(t, "the live endpoint served", func() bool { return live.count() == 5 })
	time.Sleep(200 * time.Millisecond) // the dispatcher had every chance to hand them out again
	rs := e.rows(h.ID)
	if rs[0].Status != "pending" || rs[0].Error != "connection refused" || time.Until(rs[0].Next) < 50*time.Minute {
		t.Fatalf("failed attempt %+v", rs[0])
	}
	for _, r := range rs[1:] {
		if r.Attempt != 0 || r.Queued || r.Status != "pending" || r.Error != "" || !r.Next.Equal(rs[0].Next) {
			t.Fatalf("given back %+v, want attempt 0, due with the failed one at %v", r, rs[0].Next)
		}
	}
}

// TestGoneMidBatchDisables: a 410 disables the subscription; the rest of
// the batch is given back unattempted and waits for re-activation.
func TestGoneMidBatchDisables(t *testing.T) {
	t.Parallel()
	e := newEnv(t, noWorkers())
	rc := newReceiver(t, func(n int, w http.ResponseWriter, _ *http.Request) {
		if n == 3 {
			w.WriteHeader(http.StatusGone)
			return
		}
		w.WriteHeader(200)
	})
	h := e.create(rc.url(), "*")
	for i := range 6 {
		e.emit("leads", "lead.created", strconv.Itoa(i), map[string]any{"id": i})
	}
	if n, err := e.engine.DispatchOnce(context.Background()); err != nil || n != 6 {
		t.Fatalf("dispatch = %d, %v", n, err)
	}
	e.start()
	eventually(t, "disabled", func() bool {
		s := decode[record[hook]](t, e.do("GET", "/webhooks/"+strconv.FormatInt(h.ID, 10), e.admin, nil)).Data
		return !s.Active
	})
	eventually(t, "the batch recorded", func() bool { return !e.rows(h.ID)[5].Queued })
	var got []string
	for _, r := range e.rows(h.ID) {
		got = append(got, fmt.Sprintf("%s/%d/%s/%v", r.Status, r.Attempt, r.Error, r.Queued))
	}
	want := []string{"delivered/1//false", "delivered/1//false", "failed/1/receiver answered 410 Gone/false",
		"pending/0//false", "pending/0//false", "pending/0//false"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("deliveries (-want +got):\n%s", diff)
	}
	if rc.count() != 3 {
		t.Fatalf("receiver got %d requests after the 410", rc.count())
	}
}

// TestDuplicateBatchTaskChangesNothing: a copy of a batch's task that runs
// after the batch was recorded sends nothing and records nothing.
func TestDuplicateBatchTaskChangesNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t, noWorkers())
	rc := newReceiver(t, nil)
	h := e.create(rc.url(), "*")
	for i := range 3 {
		e.emit("deals", "deal.updated", strconv.Itoa(i), map[string]any{"id": i})
	}
	if n, err := e.engine.DispatchOnce(context.Background()); err != nil || n != 3 {
		t.Fatalf("dispatch = %d, %v", n, err)
	}
	insp := asynq.NewInspectorFromRedisClient(e.rdb)
	info, err := insp.GetTaskInfo(e.cfg.Queue, delivery.TaskID(1))
	if err != nil {
		t.Fatal(err)
	}
	e.start()
	eventually(t, "delivered", func() bool { return rc.count() == 3 && !e.rows(h.ID)[2].Queued })
	before := e.rows(h.ID)
	_, err = asynq.NewClientFromRedisClient(e.rdb).Enqueue(asynq.NewTask(delivery.TaskType, info.Payload),
		asynq.Queue(e.cfg.Queue), asynq.TaskID("copy"))
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "the copy processed", func() bool {
		_, err := insp.GetTaskInfo(e.cfg.Queue, "copy")
		return err != nil
	})
	if diff := cmp.Diff(before, e.rows(h.ID)); diff != "" || rc.count() != 3 {
		t.Fatalf("the copy changed the log (-before +after):\n%s\nreceiver %d", diff, rc.count())
	}
}

// TestStoppedMidBatchSweptAgain: the process stops mid-batch and its task
// is lost with it; what was sent stays recorded, and the sweeper sends the
// rest from a new process.
func TestStoppedMidBatchSweptAgain(t *testing.T) {
	t.Parallel()
	e := newEnv(t, noWorkers(), withDelivery(func(c *delivery.Config) {
		c.Timeout = 5 * time.Second
		c.ShutdownWait = 200 * time.Millisecond
		c.StaleAfter = 6 * time.Second
		c.BatchDeadline = 500 * time.Millisecond
	}))
	entered := make(chan struct{}, 1)
	var hang atomic.Bool
	hang.Store(true)
	rc := newReceiver(t, func(n int, w http.ResponseWriter, r *http.Request) {
		if n == 3 && hang.Load() {
			entered <- struct{}{}
			<-r.Context().Done() // the sender goes away mid-request
			return
		}
		w.WriteHeader(200)
	})
	h := e.create(rc.url(), "*")
	for i := range 5 {
		e.emit("contacts", "contact.deleted", strconv.Itoa(i), map[string]any{"id": i})
	}
	if n, err := e.engine.DispatchOnce(context.Background()); err != nil || n != 5 {
		t.Fatalf("dispatch = %d, %v", n, err)
	}
	e.start()
	select {
	case <-entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the third delivery never started")
	}
	e.stop()
	ctx := context.Background()
	iter := e.rdb.Scan(ctx, 0, "asynq:{"+e.cfg.Queue+"}:*", 100).Iterator()
	for iter.Next(ctx) {
		e.rdb.Del(ctx, iter.Val())
	}
	// The attempt cut short is not recorded; the two before it are (the
	// worker records them as it gives up, just after the stop returns).
	want := []string{"delivered/1/false", "delivered/1/false", "pending/0/true", "pending/0/true", "pending/0/true"}
	var got []string
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		got = got[:0]
		for _, r := range e.rows(h.ID) {
			got = append(got, fmt.Sprintf("%s/%d/%v", r.Status, r.Attempt, r.Queued))
		}
		if cmp.Equal(want, got) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("after the stop (-want +got):\n%s", diff)
	}
	e.engine = e.newEngine(prometheus.NewRegistry())
	e.start()
	eventually(t, "the rest delivered after the sweep", func() bool {
		return len(e.deliveries(h.ID, "?status=delivered")) == 5
	})
	sent := ids(rc.got())
	if diff := cmp.Diff([]string{"evt_1", "evt_2", "evt_3", "evt_3", "evt_4", "evt_5"}, sent); diff != "" {
		t.Fatalf("requests (-want +got):\n%s", diff)
	}
}
