package tracing

import (
	"context"
	"net"
	"slices"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/attribute"
	semconv "go.opentelemetry.io/otel/semconv/v1.26.0"
	"go.opentelemetry.io/otel/trace"
)

// Redis traces rdb's connections, commands and pipelines when tracing is
// Active: a client span each, named as go-redis's own instrumentation
// (redisotel) names them, under the caller's span when that span records.
// Command arguments are never recorded: they carry personal data.
//
// It is a go-redis hook of a few lines rather than redisotel, which
// allocates its attribute slice, span options and span on every command
// whether or not the caller's trace is recorded, and for a pipeline also
// formats every argument of every command (an outbox relay's event bodies)
// into a statement it then drops. Under the 10 % sampler most calls are
// in a trace that is not recorded, and this hook does nothing for them.
func Redis(rdb *redis.Client) {
	if !Active() {
		return
	}
	attrs := []attribute.KeyValue{semconv.DBSystemRedis}
	if host, port, err := net.SplitHostPort(rdb.Options().Addr); err == nil {
		attrs = append(attrs, semconv.ServerAddress(host))
		if p, err := strconv.Atoi(port); err == nil {
			attrs = append(attrs, semconv.ServerPort(p))
		}
	}
	rdb.AddHook(redisHook{tracer: Provider().Tracer(Name),
		opts: []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...)}})
}

type redisHook struct {
	tracer trace.Tracer
	opts   []trace.SpanStartOption
}

// recording reports whether a span started under ctx would be recorded:
// with a parent that does not record, or no parent (the sampler drops a
// client span that starts a trace), it would not.
func recording(ctx context.Context) bool { return trace.SpanFromContext(ctx).IsRecording() }

func (h redisHook) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		if !recording(ctx) {
			return next(ctx, network, addr)
		}
		ctx, span := h.tracer.Start(ctx, "redis.dial", h.opts...)
		conn, err := next(ctx, network, addr)
		End(span, err)
		return conn, err
	}
}

func (h redisHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if !recording(ctx) {
			return next(ctx, cmd)
		}
		ctx, span := h.tracer.Start(ctx, cmd.FullName(), h.opts...)
		err := next(ctx, cmd)
		End(span, redisError(err))
		return err
	}
}

func (h redisHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if !recording(ctx) {
			return next(ctx, cmds)
		}
		ctx, span := h.tracer.Start(ctx, "redis.pipeline "+commandNames(cmds), h.opts...)
		span.SetAttributes(attribute.Int("db.redis.num_cmd", len(cmds)))
		err := next(ctx, cmds)
		End(span, redisError(err))
		return err
	}
}

// redisError is err unless it is redis.Nil, which answers a read of a
// missing key and is no failure.
func redisError(err error) error {
	if err == redis.Nil {
		return nil
	}
	return err
}

// commandNames lists the first ten distinct command names of cmds.
func commandNames(cmds []redis.Cmder) string {
	names := make([]string, 0, 10)
	for _, c := range cmds {
		if len(names) == cap(names) {
			break
		}
		if n := c.FullName(); !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	return strings.Join(names, " ")
}
