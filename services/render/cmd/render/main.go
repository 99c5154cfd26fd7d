// Command render is the render worker: it consumes PDF and DOCX jobs from the
// asynq queues in Redis and serves /healthz, /readyz and /metrics.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"
	"golang.org/x/sync/errgroup"

	"github.com/opencrm/crm/pkg/gogc"
	"github.com/opencrm/crm/pkg/httpx"
	"github.com/opencrm/crm/pkg/platform"
	"github.com/opencrm/crm/pkg/tracing"
	"github.com/opencrm/crm/services/render/internal/pdf"
	"github.com/opencrm/crm/services/render/internal/worker"
)

func main() {
	gogc.Default()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "render:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context) error {
	s, err := load()
	if err != nil {
		return err
	}
	opt, err := redis.ParseURL(s.Queue.RedisURL)
	if err != nil {
		return fmt.Errorf("REDIS_URL: %w", err)
	}
	// The worker has no database and verifies no token: of the platform it
	// shares the logger and tracing. Close, deferred first, runs after the
	// worker stopped, so the last jobs' spans are flushed.
	rt, err := platform.Observe(ctx, "render", s.LogLevel, s.Tracing)
	if err != nil {
		return err
	}
	defer rt.Close()
	log := rt.Log
	for _, name := range []string{"RENDER_PDF_TAGGED", "RENDER_DOCUMENT_LANG"} {
		// Tagging and the language are in each job (and its key), set by
		// the submitting service; the worker renders what the job asks.
		if _, set := os.LookupEnv(name); set {
			log.Warn(name + " has no effect on the worker; set it on the services that submit jobs")
		}
	}

	rdb := redis.NewClient(opt)
	defer rdb.Close()
	tracing.Redis(rdb)

	var renderer *pdf.Renderer
	ops, err := httpx.NewOps(
		httpx.Check{Name: "redis", Fn: func(ctx context.Context) error { return rdb.Ping(ctx).Err() }},
		httpx.Check{Name: "chromium", Fn: func(ctx context.Context) error { return renderer.Ping(ctx) }},
	)
	if err != nil {
		return err
	}
	insp := asynq.NewInspectorFromRedisClient(rdb)
	metrics, err := worker.NewMetrics(ops.Registry, insp, s.Queue.Queues)
	if err != nil {
		return err
	}
	if err := ops.Registry.Register(platform.QueueMetrics(insp, s.Queue.Queues.All()...)); err != nil {
		return err
	}
	renderer, err = pdf.New(pdf.Config{
		ChromePath:   s.ChromePath,
		Tabs:         s.Tabs,
		RestartAfter: s.RestartAfter,
		JobTimeout:   s.JobTimeout,
		MaxPages:     s.MaxPages,
		NoSandbox:    s.NoSandbox,
		Logger:       log,
		OnRestart:    metrics.BrowserRestarted,
	})
	if err != nil {
		return err
	}
	defer renderer.Close() // after the worker stopped: no tab outlives it
	if err := renderer.Start(ctx); err != nil {
		// Keep serving DOCX; PDF jobs fail fast with 503 until Chromium works.
		log.Error("chromium did not start; PDF jobs will be refused", "error", err.Error())
	}

	w, err := worker.New(rdb, worker.Config{
		Queues:          s.Queue.Queues,
		ResultTTL:       s.Queue.ResultTTL,
		Concurrency:     *s.Concurrency,
		ShutdownTimeout: 10 * time.Second,
	}, renderer, metrics, log)
	if err != nil {
		return err
	}

	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return w.Run(gctx) })
	g.Go(func() error { return httpx.Serve(gctx, s.Addr, ops.Handler(httpx.NotFoundHandler()), s.Shutdown, nil) })
	return g.Wait()
}
