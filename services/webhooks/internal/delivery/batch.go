package delivery

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/hibiken/asynq"

	"github.com/opencrm/crm/services/webhooks/internal/store"
	"github.com/opencrm/crm/services/webhooks/internal/webhooks"
)

// process is one task: a batch of one subscription's deliveries, loaded
// in one query, sent one after the other (over one kept-alive connection,
// so PerEndpoint bounds the connections to a receiver), their outcomes
// recorded in one transaction.
func (e *Engine) process(ctx context.Context, t *asynq.Task) error {
	var p payload
	if err := json.Unmarshal(t.Payload(), &p); err != nil || p.Batch == 0 {
		return fmt.Errorf("%w: bad payload %v", asynq.SkipRetry, err)
	}
	todo, err := e.store.Jobs(ctx, p.Batch)
	if err != nil {
		return err
	}
	if len(todo) == 0 {
		// Nothing listed is still to send (a duplicate of a task that
		// finished, or deliveries that ended otherwise): the batch goes.
		return e.store.Release(ctx, p.Batch)
	}
	rs, stopped := e.send(ctx, todo)
	if len(rs) > 0 {
		if err := e.record(context.WithoutCancel(ctx), p.Batch, todo, rs); err != nil {
			return err
		}
	}
	// Stopped: what was not sent stays queued in the batch, and the task
	// runs again (or the sweeper finds it).
	return stopped
}

// send attempts the jobs in order and returns a result for each one it
// made or gave back. It stops early, giving the rest back unattempted,
// when the receiver is unreachable (the rest wait the failed one's
// backoff: a dead endpoint costs one attempt per batch), answers 410 (the
// subscription is disabled), or the batch has run for BatchDeadline (the
// rest are due again at once). It returns errStopped, with the results so
// far, when the process is stopping.
func (e *Engine) send(ctx context.Context, jobs []store.Job) ([]store.Result, error) {
	rs := make([]store.Result, 0, len(jobs))
	giveBack := func(from int, next time.Time) {
		for _, j := range jobs[from:] {
			rs = append(rs, store.Result{Task: store.Task{ID: j.ID, Attempt: j.Attempt}, Outcome: store.Outcome{NextAttemptAt: next}})
		}
	}
	if !jobs[0].Active {
		// Deactivated since it was queued: they wait for re-activation.
		giveBack(0, time.Time{})
		return rs, nil
	}
	start := time.Now()
	for i, j := range jobs {
		select {
		case <-e.stopping:
			return rs, errStopped
		default:
		}
		if time.Since(start) >= e.cfg.BatchDeadline {
			giveBack(i, time.Time{})
			break
		}
		o, unreachable, err := e.attempt(ctx, j)
		if err != nil {
			return rs, err
		}
		rs = append(rs, store.Result{Task: store.Task{ID: j.ID, Attempt: j.Attempt}, Tried: true, Outcome: o})
		if o.Disable != "" {
			giveBack(i+1, time.Time{})
			break
		}
		if unreachable {
			next := o.NextAttemptAt
			if next.IsZero() { // it failed for good; the others still wait
				next = time.Now().Add(e.Backoff(j.Attempt + 1))
			}
			giveBack(i+1, next)
			break
		}
	}
	return rs, nil
}

// record stores a batch's results, counts the attempts that applied and
// wakes the dispatcher (slots are free).
func (e *Engine) record(ctx context.Context, batch int64, jobs []store.Job, rs []store.Result) error {
	applied, err := e.store.RecordBatch(ctx, batch, rs)
	if err != nil {
		return err
	}
	for i, r := range rs {
		if r.Tried && applied[r.ID] {
			e.count(jobs[i], r.Outcome)
		}
	}
	e.Wake()
	return nil
}

// count adds one applied attempt to the metrics.
func (e *Engine) count(j store.Job, o store.Outcome) {
	outcome := "retry"
	if o.Status != webhooks.StatusPending {
		outcome = o.Status
	}
	e.metrics.outcomes.WithLabelValues(outcome).Inc()
	if o.Status == webhooks.StatusDelivered && j.EventSeq != nil {
		e.metrics.endToEnd.Observe(time.Since(j.OccurredAt).Seconds())
	}
}
