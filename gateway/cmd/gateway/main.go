// Command gateway is the CRM's API gateway: the single entry point that
// routes /api/... to the services (see docs/architecture.md).
package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
	"golang.org/x/sync/errgroup"

	"github.com/opencrm/crm/gateway/internal/gateway"
	"github.com/opencrm/crm/pkg/config"
	"github.com/opencrm/crm/pkg/gogc"
	"github.com/opencrm/crm/pkg/httpx"
	"github.com/opencrm/crm/pkg/logx"
	"github.com/opencrm/crm/pkg/tracing"
)

func main() {
	gogc.Default()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "gateway:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context) error {
	var cfg gateway.Config
	if err := config.Parse(&cfg); err != nil {
		return err
	}
	log := logx.New(os.Stdout, "gateway", cfg.LogLevel)
	slog.SetDefault(log)
	stopTracing, err := tracing.Setup(ctx, "gateway", cfg.Tracing)
	if err != nil {
		return err
	}
	defer func() {
		fctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = stopTracing(fctx)
	}()
	// go-redis prints connection failures itself; the rate limiter already
	// logs them (at most once a second), so route them to debug.
	redis.SetLogger(redisLogger{log})
	g, err := gateway.New(cfg, log)
	if err != nil {
		return err
	}
	defer g.Close()
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return err
	}
	opsLn, err := net.Listen("tcp", cfg.OpsAddr)
	if err != nil {
		_ = ln.Close()
		return err
	}
	log.Info("listening", "addr", ln.Addr().String(), "ops_addr", opsLn.Addr().String())
	eg, ectx := errgroup.WithContext(ctx)
	eg.Go(func() error { return g.Serve(ectx, ln) })
	// The ops listener stops with the public one: /readyz answers 503
	// there too during the shutdown delay.
	ops := &httpx.Server{Handler: g.OpsHandler(), Shutdown: httpx.Shutdown{Delay: cfg.Shutdown.Delay, Drain: 5 * time.Second}}
	eg.Go(func() error { return ops.Serve(ectx, opsLn) })
	return eg.Wait()
}

type redisLogger struct{ log *slog.Logger }

func (l redisLogger) Printf(ctx context.Context, format string, v ...any) {
	l.log.DebugContext(ctx, "redis: "+fmt.Sprintf(format, v...))
}
