package api_test

import (
	"context"
	"net/http"
	"strconv"
	"testing"

	dto "github.com/prometheus/client_model/go"
)

// series reads one series from the env's registry.
func (e *env) series(name string, labels map[string]string) *dto.Metric {
	e.t.Helper()
	return seriesIn(e.gather(), name, labels)
}

// gather is one scrape of the env's registry: series read from one scrape
// describe one moment.
func (e *env) gather() []*dto.MetricFamily {
	e.t.Helper()
	mfs, err := e.ops.Registry.Gather()
	if err != nil {
		e.t.Fatal(err)
	}
	return mfs
}

// seriesIn is the series of name with labels in a scrape; nil when absent.
func seriesIn(mfs []*dto.MetricFamily, name string, labels map[string]string) *dto.Metric {
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	metrics:
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if want, ok := labels[lp.GetName()]; ok && want != lp.GetValue() {
					continue metrics
				}
			}
			return m
		}
	}
	return nil
}

func TestMetrics(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ok := newReceiver(t, nil)
	bad := newReceiver(t, status(http.StatusServiceUnavailable))
	e.create(ok.url(), "*")
	b := e.create(bad.url(), "*")
	e.emit("contacts", "contact.created", "1", map[string]any{"id": 1})
	eventually(t, "a delivery and a retry counted", func() bool {
		d, r := e.series("webhooks_deliveries_total", map[string]string{"outcome": "delivered"}),
			e.series("webhooks_deliveries_total", map[string]string{"outcome": "retry"})
		return d != nil && d.GetCounter().GetValue() == 1 && r != nil && r.GetCounter().GetValue() >= 1
	})
	if h := e.series("webhooks_event_to_delivered_seconds", nil); h == nil || h.GetHistogram().GetSampleCount() != 1 {
		t.Fatalf("end-to-end latency: %v", h)
	}
	if h := e.series("webhooks_attempt_duration_seconds", nil); h == nil || h.GetHistogram().GetSampleCount() < 2 {
		t.Fatalf("attempt latency: %v", h)
	}
	e.stop()
	scrape := e.gather()
	w := seriesIn(scrape, "webhooks_deliveries_pending", map[string]string{"state": "waiting"})
	q := seriesIn(scrape, "webhooks_deliveries_pending", map[string]string{"state": "queued"})
	var pending float64
	if err := e.store.DB().QueryRow(context.Background(), `SELECT count(*) FROM deliveries WHERE status = 'pending'`).Scan(&pending); err != nil {
		t.Fatal(err)
	}
	if w == nil || q == nil || pending < 1 || w.GetGauge().GetValue()+q.GetGauge().GetValue() != pending {
		rows, _ := e.store.DB().Query(context.Background(), `SELECT id, subscription_id, status,
			EXISTS (SELECT 1 FROM batches b WHERE d.id = ANY(b.deliveries)), attempt, coalesce(error, '') FROM deliveries d`)
		for rows.Next() {
			var id, sub int64
			var st, er string
			var qd bool
			var at int
			_ = rows.Scan(&id, &sub, &st, &qd, &at, &er)
			t.Logf("delivery %d sub %d %s queued=%v attempt=%d %s", id, sub, st, qd, at, er)
		}
		t.Fatalf("pending: waiting %v queued %v", w, q)
	}
	old := e.series("webhooks_oldest_undelivered_age_seconds", map[string]string{"webhook_id": strconv.FormatInt(b.ID, 10)})
	if old == nil || old.GetGauge().GetValue() <= 0 {
		t.Fatalf("oldest undelivered age of the failing subscription: %v", old)
	}
}
