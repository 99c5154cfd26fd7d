// Package logx sets up structured JSON logging (slog) whose records carry the
// request id of the context they are logged with.
package logx

import (
	"context"
	"io"
	"log/slog"

	"github.com/opencrm/crm/pkg/problem"
)

// New returns a JSON logger at the named level ("debug", "info", "warn",
// "error"), tagged with the service name, that adds request_id from context.
func New(w io.Writer, service, level string) *slog.Logger {
	var lv slog.Level
	_ = lv.UnmarshalText([]byte(level))
	h := slog.NewJSONHandler(w, &slog.HandlerOptions{Level: lv})
	return slog.New(requestIDHandler{h}).With("service", service)
}

type requestIDHandler struct{ slog.Handler }

func (h requestIDHandler) Handle(ctx context.Context, r slog.Record) error {
	if id := problem.RequestID(ctx); id != "" {
		r.AddAttrs(slog.String("request_id", id))
	}
	return h.Handler.Handle(ctx, r)
}

func (h requestIDHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return requestIDHandler{h.Handler.WithAttrs(as)}
}

func (h requestIDHandler) WithGroup(name string) slog.Handler {
	return requestIDHandler{h.Handler.WithGroup(name)}
}
