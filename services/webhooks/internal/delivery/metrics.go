package delivery

import (
	"context"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/opencrm/crm/pkg/db"
)

// Metrics are the delivery engine's series.
type Metrics struct {
	outcomes *prometheus.CounterVec
	attempt  prometheus.Histogram
	endToEnd prometheus.Histogram
}

// NewMetrics registers the engine's series on reg, with the queue state
// read from d at each scrape.
func NewMetrics(reg prometheus.Registerer, d *db.DB) (*Metrics, error) {
	m := &Metrics{
		outcomes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "webhooks_deliveries_total",
			Help: "Delivery attempts by outcome: delivered, retry (will be tried again), failed (given up).",
		}, []string{"outcome"}),
		attempt: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "webhooks_attempt_duration_seconds",
			Help:    "Duration of one delivery attempt (request and answer).",
			Buckets: []float64{.01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}),
		endToEnd: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "webhooks_event_to_delivered_seconds",
			Help:    "Time from the change to its successful delivery.",
			Buckets: []float64{.05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300, 1800, 3600, 21600, 86400},
		}),
	}
	for _, c := range []prometheus.Collector{m.outcomes, m.attempt, m.endToEnd, newQueueCollector(d)} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// queueCollector reports the pending deliveries (waiting, or queued to a
// worker) and, per subscription, the age of its oldest undelivered event:
// the series to alert on when a receiver falls behind. One query per
// scrape over the partial indexes of pending deliveries.
type queueCollector struct {
	db            *db.DB
	depth, oldest *prometheus.Desc
}

func newQueueCollector(d *db.DB) *queueCollector {
	return &queueCollector{db: d,
		depth: prometheus.NewDesc("webhooks_deliveries_pending",
			"Pending deliveries: waiting for their attempt, or queued to a worker.", []string{"state"}, nil),
		oldest: prometheus.NewDesc("webhooks_oldest_undelivered_age_seconds",
			"Age of the oldest pending delivery's event, per active subscription (0 when none waits).", []string{"webhook_id"}, nil),
	}
}

func (c *queueCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.depth; ch <- c.oldest }

// Collect reports nothing on a failed query (an absent series, not a
// false zero).
func (c *queueCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	var waiting, queued float64
	if err := c.db.QueryRow(ctx, `SELECT count(*), (SELECT coalesce(sum(cardinality(deliveries)), 0) FROM batches)
		FROM deliveries WHERE status = 'pending'`).Scan(&waiting, &queued); err != nil {
		return
	}
	waiting = max(waiting-queued, 0)
	ch <- prometheus.MustNewConstMetric(c.depth, prometheus.GaugeValue, waiting, "waiting")
	ch <- prometheus.MustNewConstMetric(c.depth, prometheus.GaugeValue, queued, "queued")
	rows, err := c.db.Query(ctx, `SELECT s.id, COALESCE(EXTRACT(EPOCH FROM now() - min(COALESCE(e.occurred_at, d.created_at))), 0)::float8
		FROM subscriptions s LEFT JOIN deliveries d ON d.subscription_id = s.id AND d.status = 'pending'
		LEFT JOIN events e ON e.seq = d.event_seq WHERE s.active GROUP BY s.id`)
	if err != nil {
		return
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		var age float64
		if rows.Scan(&id, &age) == nil {
			ch <- prometheus.MustNewConstMetric(c.oldest, prometheus.GaugeValue, age, strconv.FormatInt(id, 10))
		}
	}
}
