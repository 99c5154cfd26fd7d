// Package logx sets up structured JSON logging (slog) whose records carry the
// request id and the trace of the context they are logged with.
package logx

import (
	"context"
	"io"
	"log/slog"

	"go.opentelemetry.io/otel/trace"

	"github.com/opencrm/crm/pkg/buildinfo"
	"github.com/opencrm/crm/pkg/problem"
)

// New returns a JSON logger at the named level ("debug", "info", "warn",
// "error"), tagged with the service name and the release it runs
// (pkg/buildinfo: two run side by side during a rolling deploy), that adds request_id, trace_id
// and span_id from context, so a log line leads to its trace and back.
func New(w io.Writer, service, level string) *slog.Logger {
	var lv slog.Level
	_ = lv.UnmarshalText([]byte(level))
	h := slog.NewJSONHandler(w, &slog.HandlerOptions{Level: lv})
	return slog.New(contextHandler{h}).With("service", service, "version", buildinfo.Version())
}

type contextHandler struct{ slog.Handler }

func (h contextHandler) Handle(ctx context.Context, r slog.Record) error {
	if id := problem.RequestID(ctx); id != "" {
		r.AddAttrs(slog.String("request_id", id))
	}
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		r.AddAttrs(slog.String("trace_id", sc.TraceID().String()), slog.String("span_id", sc.SpanID().String()))
	}
	return h.Handler.Handle(ctx, r)
}

func (h contextHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return contextHandler{h.Handler.WithAttrs(as)}
}

func (h contextHandler) WithGroup(name string) slog.Handler {
	return contextHandler{h.Handler.WithGroup(name)}
}
