package outbox

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/opencrm/crm/pkg/db"
)

// LagCollector exposes outbox_oldest_unpublished_age_seconds: how long the
// oldest event not yet relayed to Redis has waited (0 when none waits). It
// grows when the relay is stuck or Redis is away, while consumers simply
// see nothing new, so it is the metric to alert on. The query runs at
// each scrape and reads the partial index of unpublished rows.
type LagCollector struct {
	db   *db.DB
	desc *prometheus.Desc
}

// NewLagCollector reports the outbox lag of d's schema.
func NewLagCollector(d *db.DB) *LagCollector {
	return &LagCollector{db: d, desc: prometheus.NewDesc("outbox_oldest_unpublished_age_seconds",
		"Age of the oldest outbox event not yet published to its stream (0 when none waits).",
		nil, prometheus.Labels{"schema": d.Schema})}
}

// Describe implements prometheus.Collector.
func (c *LagCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

// Collect implements prometheus.Collector. A failed query reports no
// sample (an absent series, not a false zero) rather than an error, which
// would fail the whole scrape.
func (c *LagCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	var age float64
	err := c.db.QueryRow(ctx, `SELECT COALESCE(EXTRACT(EPOCH FROM now() - min(created_at)), 0)::float8
		FROM outbox WHERE published_at IS NULL`).Scan(&age)
	if err != nil {
		return
	}
	ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, age)
}
