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

	"github.com/opencrm/crm/pkg/config"
	"github.com/opencrm/crm/pkg/httpx"
	"github.com/opencrm/crm/pkg/platform"
	"github.com/opencrm/crm/pkg/renderq"
	"github.com/opencrm/crm/pkg/tracing"
	"github.com/opencrm/crm/services/render/internal/pdf"
	"github.com/opencrm/crm/services/render/internal/worker"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "render:", err)
		os.Exit(1)
	}
}

// settings is the worker's configuration, read once from the environment.
type settings struct {
	Addr         string
	LogLevel     string
	Queue        renderq.Config
	ChromePath   string
	NoSandbox    bool
	Tabs         int
	Concurrency  int
	RestartAfter int
	JobTimeout   time.Duration
	MaxPages     int
	Shutdown     httpx.Shutdown
	Tracing      tracing.Config
}

func load() (settings, error) {
	l := config.New()
	s := settings{
		Addr:       l.String("ADDR", ":8088"),
		LogLevel:   l.String("LOG_LEVEL", "info"),
		Queue:      renderq.LoadConfig(l),
		ChromePath: l.String("CHROME_PATH", "chromium"),
		// Chromium's sandbox refuses to run as root; the image runs as an
		// unprivileged user, so only a root run (dev machine, CI) turns it off.
		NoSandbox:    l.Bool("CHROME_NO_SANDBOX", os.Geteuid() == 0),
		Tabs:         l.Int("RENDER_TABS", 4, 1, 64),
		RestartAfter: l.Int("RENDER_BROWSER_RESTART_AFTER", 500, 1, 1_000_000),
		// Below the client's 30 s wait, so a document too heavy to lay out
		// is refused while its user still waits, instead of holding a tab
		// after the user got a 503 (docs/decisions.md).
		JobTimeout: l.Duration("RENDER_JOB_TIMEOUT", 20*time.Second),
		MaxPages:   l.Int("RENDER_MAX_PAGES", 300, 1, 100_000),
		Shutdown:   httpx.LoadShutdown(l),
		Tracing:    tracing.Load(l),
	}
	// DOCX jobs need no tab, so a couple of extra slots keep them flowing
	// while every tab prints.
	s.Concurrency = l.Int("RENDER_CONCURRENCY", s.Tabs+2, 1, 256)
	return s, l.Err()
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
		Concurrency:     s.Concurrency,
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
