package gateway

import (
	"encoding/json"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/opencrm/crm/pkg/buildinfo"
)

// metrics are the gateway's Prometheus instruments. Requests are labelled
// by the templated route (routeTemplates), never by the raw path, so ids
// do not explode label cardinality.
type metrics struct {
	reg      *prometheus.Registry
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
	upstream *prometheus.HistogramVec
	// dependency is set by each /readyz: 1 when Redis answers, and when
	// identity's JWKS answered the latest fetch.
	dependency *prometheus.GaugeVec
}

func newMetrics() (*metrics, error) {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gateway_requests_total", Help: "Requests by route pattern, method and status.",
		}, []string{"route", "method", "status"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "gateway_request_duration_seconds", Help: "Time to the response headers, by route pattern.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60},
		}, []string{"route", "method"}),
		upstream: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "gateway_upstream_duration_seconds", Help: "Upstream latency to response headers, by service and status class.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60},
		}, []string{"service", "status"}),
		dependency: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "gateway_dependency_up",
			Help: "1 if the dependency answered at the latest /readyz (jwks: the latest key fetch succeeded), else 0; neither makes the gateway unready once it has keys.",
		}, []string{"dependency"}),
	}
	for _, c := range []prometheus.Collector{
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		m.requests, m.duration, m.upstream, m.dependency, buildinfo.Metric(),
	} {
		if err := m.reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// OpsHandler serves /metrics, /healthz and /readyz for the ops listener
// (OPS_ADDR): metrics stay off the public port, where anyone could read
// the traffic and error rates of every route.
func (g *Gateway) OpsHandler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(g.metrics.reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		status, body := g.readiness(r.Context())
		writeJSON(w, status, body)
	})
	return mux
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
