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

	"github.com/redis/go-redis/v9"

	"github.com/opencrm/crm/gateway/internal/gateway"
	"github.com/opencrm/crm/pkg/config"
	"github.com/opencrm/crm/pkg/logx"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "gateway:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context) error {
	cfg, err := gateway.LoadConfig(config.New())
	if err != nil {
		return err
	}
	log := logx.New(os.Stdout, "gateway", cfg.LogLevel)
	slog.SetDefault(log)
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
	log.Info("listening", "addr", ln.Addr().String())
	return g.Serve(ctx, ln)
}

type redisLogger struct{ log *slog.Logger }

func (l redisLogger) Printf(ctx context.Context, format string, v ...any) {
	l.log.DebugContext(ctx, "redis: "+fmt.Sprintf(format, v...))
}
