// Package worker is the asynq side of the render service: it takes render
// jobs off the priority queues, renders them (PDF through Chromium, DOCX
// natively), stores the file under the job key and tells the waiting client.
package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/hibiken/asynq"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/opencrm/crm/pkg/renderq"
	"github.com/opencrm/crm/pkg/tracing"
	"github.com/opencrm/crm/services/render/internal/docx"
	"github.com/opencrm/crm/services/render/internal/pdf"
)

// PDFRenderer prints a job; *pdf.Renderer is the implementation.
type PDFRenderer interface {
	Render(ctx context.Context, job renderq.Job) ([]byte, error)
}

// Config tunes the worker.
type Config struct {
	Queues      renderq.Queues
	ResultTTL   time.Duration
	Concurrency int
	// ShutdownTimeout is how long running jobs may finish on shutdown before
	// asynq puts them back on the queue.
	ShutdownTimeout time.Duration
}

// Worker consumes render tasks.
type Worker struct {
	cfg     Config
	srv     *asynq.Server
	store   *renderq.Store
	pdf     PDFRenderer
	metrics *Metrics
	log     *slog.Logger
}

// New builds a worker on rdb; it starts consuming in Run.
func New(rdb redis.UniversalClient, cfg Config, p PDFRenderer, m *Metrics, log *slog.Logger) (*Worker, error) {
	if cfg.Concurrency < 1 {
		return nil, fmt.Errorf("worker: Concurrency must be at least 1, got %d", cfg.Concurrency)
	}
	if cfg.ResultTTL <= 0 {
		return nil, errors.New("worker: ResultTTL must be positive")
	}
	w := &Worker{cfg: cfg, store: renderq.NewStore(rdb, cfg.Queues, cfg.ResultTTL), pdf: p, metrics: m, log: log}
	w.srv = asynq.NewServerFromRedisClient(rdb, asynq.Config{
		Concurrency: cfg.Concurrency,
		// Strict: a batch job only starts when no interactive job waits.
		Queues: map[string]int{
			cfg.Queues.Name(renderq.Interactive): 10,
			cfg.Queues.Name(renderq.Batch):       1,
		},
		StrictPriority: true,
		// Short, bounded back-off: a user may be waiting on the retry.
		RetryDelayFunc: func(n int, _ error, _ *asynq.Task) time.Duration {
			return min(time.Duration(1<<min(n, 5))*time.Second, 30*time.Second)
		},
		DelayedTaskCheckInterval: time.Second,
		// asynq polls an empty queue at this interval; its 1 s default
		// would add up to a second to an interactive download. 25 ms is one
		// cheap Redis script call per poll, 40/s when idle.
		TaskCheckInterval: 25 * time.Millisecond,
		ShutdownTimeout:   cfg.ShutdownTimeout,
		Logger:            asynqLogger{log},
		LogLevel:          asynq.WarnLevel,
	})
	return w, nil
}

// Run consumes tasks until ctx ends, then shuts down gracefully.
func (w *Worker) Run(ctx context.Context) error {
	mux := asynq.NewServeMux()
	mux.Use(tracing.Middleware) // the job joins the trace that enqueued it
	mux.Handle(renderq.TaskType, w)
	if err := w.srv.Start(mux); err != nil {
		return fmt.Errorf("worker: start: %w", err)
	}
	w.log.Info("render worker consuming", "queues", w.cfg.Queues.All(), "concurrency", w.cfg.Concurrency)
	<-ctx.Done()
	w.srv.Shutdown()
	return nil
}

// ProcessTask renders one job. It is idempotent by job key: a task that was
// recovered after a crash, or a rescue copy, finds the stored result and
// returns at once.
func (w *Worker) ProcessTask(ctx context.Context, t *asynq.Task) error {
	job, err := renderq.ParseTask(t)
	if err != nil {
		return fmt.Errorf("%w: %v", asynq.SkipRetry, err)
	}
	key := job.Key()
	if done, err := w.store.HasResult(ctx, key); err == nil && done {
		return nil
	}
	start := time.Now()
	var data []byte
	switch job.Format {
	case renderq.PDF:
		data, err = w.pdf.Render(ctx, job)
	case renderq.DOCX:
		data, err = docx.Render(job)
	}
	w.metrics.observe(job.Format, err, time.Since(start))
	if err != nil {
		return w.fail(ctx, key, err)
	}
	if err := w.store.PutResult(ctx, key, data); err != nil {
		return fmt.Errorf("worker: store result: %w", err)
	}
	return nil
}

// fail decides between retrying and giving up, and tells the client when
// giving up so it does not wait for nothing.
func (w *Worker) fail(ctx context.Context, key string, err error) error {
	f := renderq.Failure{Code: renderq.FailureExhausted, Message: err.Error()}
	permanent := false
	var tooLong *pdf.TooLongError
	var slow *pdf.ContentTimeoutError
	switch {
	case errors.Is(err, pdf.ErrUnavailable):
		f.Code, permanent = renderq.FailureUnavailable, true
	case errors.As(err, &tooLong):
		// The content decides; a retry would print the same pages again.
		f.Code, permanent = renderq.FailureTooLong, true
		f.MaxPages = tooLong.MaxPages
	case errors.As(err, &slow):
		f.Code, permanent = renderq.FailureContentTimeout, true
	}
	retried, _ := asynq.GetRetryCount(ctx)
	maxRetry, _ := asynq.GetMaxRetry(ctx)
	if !permanent && retried < maxRetry {
		w.log.Warn("render failed, will retry", "key", key, "retry", retried, "error", err.Error())
		return err
	}
	if f.Code == renderq.FailureTooLong || f.Code == renderq.FailureContentTimeout {
		// The user's document, not the system: a warning, not an error.
		w.log.Warn("render refused", "key", key, "code", f.Code, "error", err.Error())
	} else {
		w.log.Error("render failed", "key", key, "code", f.Code, "error", err.Error())
	}
	if perr := w.store.PutFailure(context.WithoutCancel(ctx), key, f); perr != nil {
		w.log.Error("recording failure", "error", perr.Error())
		return fmt.Errorf("%w: %v", asynq.SkipRetry, err)
	}
	// Given up and told the client: the task ends as done, so asynq deletes
	// it instead of archiving it for 90 days with the contract's HTML (a
	// contract's personal data) in its payload. Like asynq.SkipRetry, this
	// is never retried; unlike it, nothing is kept.
	return nil
}

// asynqLogger routes asynq's logs to slog.
type asynqLogger struct{ l *slog.Logger }

func (a asynqLogger) Debug(args ...any) { a.l.Debug(fmt.Sprint(args...)) }
func (a asynqLogger) Info(args ...any)  { a.l.Info(fmt.Sprint(args...)) }
func (a asynqLogger) Warn(args ...any)  { a.l.Warn(fmt.Sprint(args...)) }
func (a asynqLogger) Error(args ...any) { a.l.Error(fmt.Sprint(args...)) }
func (a asynqLogger) Fatal(args ...any) { a.l.Error(fmt.Sprint(args...)); os.Exit(1) }

// Metrics are the worker's Prometheus series.
type Metrics struct {
	duration *prometheus.HistogramVec
	restarts *prometheus.CounterVec
}

// NewMetrics registers the render duration histogram, the browser restart
// counter and a queue depth collector that asks asynq on each scrape.
func NewMetrics(reg prometheus.Registerer, inspector *asynq.Inspector, q renderq.Queues) (*Metrics, error) {
	m := &Metrics{
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "render_duration_seconds",
			Help:    "Time to render one job, by format and outcome.",
			Buckets: []float64{.01, .025, .05, .1, .25, .5, 1, 2, 4, 8, 16, 32},
		}, []string{"format", "outcome"}),
		restarts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "render_browser_restarts_total",
			Help: "Chromium browsers replaced, by reason (job_limit, unhealthy).",
		}, []string{"reason"}),
	}
	for _, c := range []prometheus.Collector{m.duration, m.restarts, &queueDepth{inspector: inspector, queues: q}} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// BrowserRestarted counts a browser replacement; pass it as pdf OnRestart.
func (m *Metrics) BrowserRestarted(reason string) { m.restarts.WithLabelValues(reason).Inc() }

func (m *Metrics) observe(f renderq.Format, err error, d time.Duration) {
	outcome := "ok"
	if err != nil {
		outcome = "error"
	}
	m.duration.WithLabelValues(string(f), outcome).Observe(d.Seconds())
}

var depthDesc = prometheus.NewDesc("render_queue_depth",
	"Tasks in a render queue, by state (pending, active, retry).", []string{"queue", "state"}, nil)

// queueDepth reads the queue sizes at scrape time, so the gauge is never
// stale and the worker does no polling of its own.
type queueDepth struct {
	inspector *asynq.Inspector
	queues    renderq.Queues
}

func (q *queueDepth) Describe(ch chan<- *prometheus.Desc) { ch <- depthDesc }

func (q *queueDepth) Collect(ch chan<- prometheus.Metric) {
	for _, name := range q.queues.All() {
		info, err := q.inspector.GetQueueInfo(name)
		if err != nil {
			continue // queue not created yet, or Redis down: no sample
		}
		for state, n := range map[string]int{"pending": info.Pending, "active": info.Active, "retry": info.Retry} {
			ch <- prometheus.MustNewConstMetric(depthDesc, prometheus.GaugeValue, float64(n), name, state)
		}
	}
}
