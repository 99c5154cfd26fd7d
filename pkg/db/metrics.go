package db

import (
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
)

// PoolCollector exposes a pool's pgxpool.Stat as Prometheus metrics
// (pgxpool_*), read at each scrape: a pool that runs out of connections
// (acquire waits and their duration climbing, idle at zero) shows up
// before requests time out.
type PoolCollector struct {
	pool  *pgxpool.Pool
	descs map[string]*prometheus.Desc
}

// NewPoolCollector collects d's pool statistics.
func NewPoolCollector(d *DB) *PoolCollector {
	c := &PoolCollector{pool: d.Pool, descs: map[string]*prometheus.Desc{}}
	for name, help := range poolMetrics {
		c.descs[name] = prometheus.NewDesc("pgxpool_"+name, help, nil, prometheus.Labels{"schema": d.Schema})
	}
	return c
}

var poolMetrics = map[string]string{
	"max_conns":                        "Maximum size of the pool.",
	"total_conns":                      "Connections in the pool: acquired, idle and being opened.",
	"acquired_conns":                   "Connections in use.",
	"idle_conns":                       "Connections idle in the pool.",
	"constructing_conns":               "Connections being opened.",
	"acquires_total":                   "Successful acquires from the pool.",
	"empty_acquires_total":             "Acquires that had to wait for a connection (the pool was empty).",
	"canceled_acquires_total":          "Acquires cancelled by their context before a connection was free.",
	"acquire_duration_seconds_total":   "Time spent acquiring connections, successful acquires only.",
	"empty_acquire_wait_seconds_total": "Time spent waiting for a connection by acquires that found the pool empty.",
	"new_conns_total":                  "Connections opened.",
	"max_lifetime_destroys_total":      "Connections closed for reaching their maximum lifetime.",
	"max_idle_destroys_total":          "Connections closed for idling too long.",
}

// Describe implements prometheus.Collector.
func (c *PoolCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.descs {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *PoolCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.pool.Stat()
	gauge := func(name string, v float64) {
		ch <- prometheus.MustNewConstMetric(c.descs[name], prometheus.GaugeValue, v)
	}
	counter := func(name string, v float64) {
		ch <- prometheus.MustNewConstMetric(c.descs[name], prometheus.CounterValue, v)
	}
	gauge("max_conns", float64(s.MaxConns()))
	gauge("total_conns", float64(s.TotalConns()))
	gauge("acquired_conns", float64(s.AcquiredConns()))
	gauge("idle_conns", float64(s.IdleConns()))
	gauge("constructing_conns", float64(s.ConstructingConns()))
	counter("acquires_total", float64(s.AcquireCount()))
	counter("empty_acquires_total", float64(s.EmptyAcquireCount()))
	counter("canceled_acquires_total", float64(s.CanceledAcquireCount()))
	counter("acquire_duration_seconds_total", s.AcquireDuration().Seconds())
	counter("empty_acquire_wait_seconds_total", s.EmptyAcquireWaitTime().Seconds())
	counter("new_conns_total", float64(s.NewConnsCount()))
	counter("max_lifetime_destroys_total", float64(s.MaxLifetimeDestroyCount()))
	counter("max_idle_destroys_total", float64(s.MaxIdleDestroyCount()))
}
