package platform

import (
	"github.com/hibiken/asynq"
	"github.com/prometheus/client_golang/prometheus"
)

// queueDescs are asynq's own queue metrics, named and labelled as its
// x/metrics QueueMetricsCollector names them, so asynq's dashboards and
// asynqmon's metrics view read them unchanged. That collector reports
// every queue it finds in Redis, where each queue must be exported by the
// one process that owns it (or a dashboard summing over processes counts
// it several times), and its module drags a 2021 dependency graph (an old
// genproto that collides with OpenTelemetry's): this is the same dozen
// lines over Inspector.GetQueueInfo, for the owner's queues only.
var queueDescs = struct {
	enqueued, size, latency, memory, processed, failed, paused *prometheus.Desc
}{
	enqueued:  prometheus.NewDesc("asynq_tasks_enqueued_total", "Number of tasks enqueued; broken down by queue and state.", []string{"queue", "state"}, nil),
	size:      prometheus.NewDesc("asynq_queue_size", "Number of tasks in a queue.", []string{"queue"}, nil),
	latency:   prometheus.NewDesc("asynq_queue_latency_seconds", "Number of seconds the oldest pending task is waiting in pending state to be processed.", []string{"queue"}, nil),
	memory:    prometheus.NewDesc("asynq_queue_memory_usage_approx_bytes", "Number of memory used by a given queue (approximated number by sampling).", []string{"queue"}, nil),
	processed: prometheus.NewDesc("asynq_tasks_processed_total", "Number of tasks processed (both succeeded and failed); broken down by queue.", []string{"queue"}, nil),
	failed:    prometheus.NewDesc("asynq_tasks_failed_total", "Number of tasks failed; broken down by queue.", []string{"queue"}, nil),
	paused:    prometheus.NewDesc("asynq_queue_paused_total", "Number of queues paused.", []string{"queue"}, nil),
}

// QueueMetrics exports asynq's metrics of queues: depth by state, size,
// latency (age of the oldest pending task), memory, processed and failed
// totals, paused. A queue that does not exist yet (nothing enqueued ever)
// reports nothing.
func QueueMetrics(insp *asynq.Inspector, queues ...string) prometheus.Collector {
	return &queueCollector{insp: insp, queues: queues}
}

type queueCollector struct {
	insp   *asynq.Inspector
	queues []string
}

func (c *queueCollector) Describe(ch chan<- *prometheus.Desc) {
	d := queueDescs
	for _, x := range []*prometheus.Desc{d.enqueued, d.size, d.latency, d.memory, d.processed, d.failed, d.paused} {
		ch <- x
	}
}

func (c *queueCollector) Collect(ch chan<- prometheus.Metric) {
	d := queueDescs
	for _, q := range c.queues {
		info, err := c.insp.GetQueueInfo(q)
		if err != nil {
			continue
		}
		gauge := func(desc *prometheus.Desc, v float64, labels ...string) {
			ch <- prometheus.MustNewConstMetric(desc, prometheus.GaugeValue, v, append([]string{q}, labels...)...)
		}
		for state, n := range map[string]int{"active": info.Active, "pending": info.Pending, "scheduled": info.Scheduled,
			"retry": info.Retry, "archived": info.Archived, "completed": info.Completed} {
			gauge(d.enqueued, float64(n), state)
		}
		gauge(d.size, float64(info.Size))
		gauge(d.latency, info.Latency.Seconds())
		gauge(d.memory, float64(info.MemoryUsage))
		ch <- prometheus.MustNewConstMetric(d.processed, prometheus.CounterValue, float64(info.ProcessedTotal), q)
		ch <- prometheus.MustNewConstMetric(d.failed, prometheus.CounterValue, float64(info.FailedTotal), q)
		paused := 0.0
		if info.Paused {
			paused = 1
		}
		gauge(d.paused, paused)
	}
}

// ExportQueues adds asynq's metrics of the named queues, which this
// process serves, to its /metrics.
func (rt *Runtime) ExportQueues(queues ...string) error {
	return rt.Ops.Registry.Register(QueueMetrics(asynq.NewInspectorFromRedisClient(rt.Redis), queues...))
}
