package e2e

import (
	"compress/gzip"
	"context"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"
)

// span is what the trace tests look at of one exported span.
type span struct {
	Service, Name           string
	TraceID, SpanID, Parent string
	Kind                    string
}

// collector is an OTLP/HTTP trace receiver keeping spans in memory by
// trace id; the stack's processes export to it.
type collector struct {
	srv *httptest.Server
	// discard drops what arrives undecoded, so a benchmark measures the
	// services' cost of tracing rather than this receiver's.
	discard atomic.Bool
	mu      sync.Mutex
	byTID   map[string][]span
	n       int
}

// maxSpans bounds the memory of a long run; later spans are dropped.
const maxSpans = 500_000

func newCollector() *collector {
	c := &collector{byTID: map[string][]span{}}
	c.srv = httptest.NewServer(http.HandlerFunc(c.export))
	return c
}

func (c *collector) Close() { c.srv.Close() }

// URL is the OTEL_EXPORTER_OTLP_ENDPOINT of the stack.
func (c *collector) URL() string { return c.srv.URL }

func (c *collector) export(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/traces" {
		http.NotFound(w, r)
		return
	}
	if c.discard.Load() {
		_, _ = io.Copy(io.Discard, r.Body)
		out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(out)
		return
	}
	var body io.Reader = r.Body
	if r.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		body = zr
	}
	raw, err := io.ReadAll(body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var req coltracepb.ExportTraceServiceRequest
	if err := proto.Unmarshal(raw, &req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	c.mu.Lock()
	for _, rs := range req.GetResourceSpans() {
		service := ""
		for _, a := range rs.GetResource().GetAttributes() {
			if a.GetKey() == "service.name" {
				service = a.GetValue().GetStringValue()
			}
		}
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				if c.n >= maxSpans {
					break
				}
				tid := hex.EncodeToString(s.GetTraceId())
				c.byTID[tid] = append(c.byTID[tid], span{
					Service: service, Name: s.GetName(), TraceID: tid,
					SpanID: hex.EncodeToString(s.GetSpanId()), Parent: hex.EncodeToString(s.GetParentSpanId()),
					Kind: s.GetKind().String(),
				})
				c.n++
			}
		}
	}
	c.mu.Unlock()
	out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

// trace returns the spans of a trace received so far.
func (c *collector) trace(tid string) []span {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]span(nil), c.byTID[tid]...)
}

// SetEnv restarts every running process with env changed (an empty value
// removes the variable), keeping the database and Redis as they are.
func (s *Stack) SetEnv(ctx context.Context, env map[string]string) error {
	s.mu.Lock()
	var names []string
	for n := range s.procs {
		names = append(names, n)
	}
	for _, n := range names {
		var kept []string
		for _, kv := range s.env[n] {
			k, _, _ := cutEq(kv)
			if _, ok := env[k]; !ok {
				kept = append(kept, kv)
			}
		}
		for k, v := range env {
			if v != "" {
				kept = append(kept, k+"="+v)
			}
		}
		s.env[n] = kept
	}
	s.mu.Unlock()
	// Identity first: the others fetch its keys at start-up.
	order := append([]string{"identity"}, names...)
	done := map[string]bool{}
	for _, n := range order {
		if done[n] || s.procs[n] == nil {
			continue
		}
		done[n] = true
		if err := s.Restart(ctx, n); err != nil {
			return err
		}
	}
	return nil
}

func cutEq(kv string) (string, string, bool) {
	for i := 0; i < len(kv); i++ {
		if kv[i] == '=' {
			return kv[:i], kv[i+1:], true
		}
	}
	return kv, "", false
}
