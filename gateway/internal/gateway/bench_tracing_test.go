package gateway

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"testing"

	otelresource "go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/opencrm/crm/pkg/tracing"
)

// discard is an in-process exporter that drops every batch: the cost of
// recording and batching spans without a collector's.
type discard struct{}

func (discard) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (discard) Shutdown(context.Context) error                             { return nil }

// BenchmarkProxyTracing is BenchmarkProxyJWT with tracing off (no-op
// provider) and on (every span recorded and batched to an in-process
// exporter), alternating three times so a drift of the machine's load
// weighs on both. Compare the ns/op of the off and on runs.
func BenchmarkProxyTracing(b *testing.B) {
	b.Cleanup(func() { tracing.Install(nil) })
	for round := 1; round <= 3; round++ {
		for _, on := range []bool{false, true} {
			name := fmt.Sprintf("tracing=off/round=%d", round)
			var tp *sdktrace.TracerProvider
			if on {
				name = fmt.Sprintf("tracing=on/round=%d", round)
				tp = tracing.NewProvider(otelresource.Empty(), sdktrace.NewBatchSpanProcessor(discard{}), 1)
			}
			// Installed before the gateway is built: its traced transport
			// and Redis hooks are chosen at construction.
			tracing.Install(tp)
			e := newEnv(b, func(c *Config) { c.UserPerMinute, c.IPPerMinute = 1_000_000, 1_000_000 })
			tok := e.iss.User(b, 7)
			b.Run(name, func(b *testing.B) {
				b.ReportAllocs()
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						hr, _ := http.NewRequest("GET", e.base+"/api/contacts/7?x=1", nil)
						hr.Header.Set("Authorization", "Bearer "+tok)
						resp, err := e.client.Do(hr)
						if err != nil {
							b.Error(err)
							return
						}
						_, _ = io.Copy(io.Discard, resp.Body)
						_ = resp.Body.Close()
					}
				})
			})
			if tp != nil {
				_ = tp.Shutdown(context.Background())
			}
		}
	}
}
