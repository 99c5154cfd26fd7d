package gateway

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// slowService answers every request once the test releases it; entered
// reports each request's arrival.
type slowService struct {
	srv     *httptest.Server
	entered chan struct{}
	gate    chan struct{}
	once    sync.Once
}

func newSlowService(t *testing.T) *slowService {
	t.Helper()
	s := &slowService{entered: make(chan struct{}, 4), gate: make(chan struct{})}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.entered <- struct{}{}
		<-s.gate
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"slow":"done"}`)
	}))
	t.Cleanup(s.srv.Close)
	t.Cleanup(s.release) // before Close, which waits for the handlers
	return s
}

func (s *slowService) release() { s.once.Do(func() { close(s.gate) }) }

// inFlight starts a request through the gateway on its own connection and
// returns where its outcome arrives (status -1: transport error).
func inFlight(e *env, path, token string) <-chan response {
	out := make(chan response, 1)
	go func() {
		hr, _ := http.NewRequest(http.MethodGet, e.base+path, nil)
		hr.Header.Set("Authorization", "Bearer "+token)
		client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
		resp, err := client.Do(hr)
		if err != nil {
			out <- response{status: -1, body: []byte(err.Error())}
			return
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			out <- response{status: -1, body: []byte(err.Error())}
			return
		}
		out <- response{status: resp.StatusCode, header: resp.Header, body: b}
	}()
	return out
}

// TestShutdownDelaysThenDrains: on SIGTERM the gateway first keeps serving
// with /readyz at 503 and connections closed after each response, then
// closes its listener and lets the request in flight (a slow contract PDF)
// finish with its 200; Serve returns nil. The test ends the delay itself,
// so no timer decides anything.
func TestShutdownDelaysThenDrains(t *testing.T) {
	t.Parallel()
	contracts := newSlowService(t)
	e := newEnv(t, func(c *Config) {
		c.Services[SvcContracts] = contracts.srv.URL
		c.Shutdown.Delay = time.Hour
	})
	delayStarted, endDelay, drainStarted := make(chan struct{}), make(chan time.Time), make(chan struct{})
	var delayAsked time.Duration
	e.g.after = func(d time.Duration) <-chan time.Time {
		delayAsked = d
		close(delayStarted)
		return endDelay
	}
	e.g.onDrain = func() { close(drainStarted) }
	token := e.iss.User(t, 7)

	wantReadyz(t, e.do(req{path: "/readyz"}), http.StatusOK,
		map[string]any{"status": "ok", "checks": map[string]any{"jwks": "ok", "redis": "ok"}})
	pdf := inFlight(e, "/api/contracts/5/pdf", token)
	<-contracts.entered

	stopped := make(chan error, 1)
	go func() { stopped <- e.stop() }() // SIGTERM
	select {
	case <-delayStarted:
	case err := <-stopped:
		t.Fatalf("Serve returned (%v) without the shutdown delay", err)
	}
	if delayAsked != time.Hour {
		t.Errorf("delay = %s, want the configured 1h", delayAsked)
	}
	wantReadyz(t, e.do(req{path: "/readyz"}), http.StatusServiceUnavailable, map[string]any{"status": "shutting_down"})
	r := e.do(req{path: "/api/contacts", token: token})
	echoed(t, r)
	if !r.close {
		t.Error("connection kept alive during the delay, want Connection: close")
	}

	close(endDelay)
	<-drainStarted
	// fasthttp closes the listener as its shutdown starts.
	for deadline := time.Now().Add(10 * time.Second); ; {
		c, err := net.Dial("tcp", strings.TrimPrefix(e.base, "http://"))
		if err != nil {
			break
		}
		_ = c.Close()
		if time.Now().After(deadline) {
			t.Fatal("the listener still accepts connections after the delay")
		}
		time.Sleep(5 * time.Millisecond)
	}
	contracts.release()
	got := <-pdf
	if got.status != http.StatusOK {
		t.Fatalf("request in flight when shutdown started: %d %s", got.status, got.body)
	}
	if d := cmp.Diff(`{"slow":"done"}`, string(got.body)); d != "" {
		t.Errorf("request in flight when shutdown started (-want +got):\n%s", d)
	}
	if err := <-stopped; err != nil {
		t.Errorf("Serve = %v, want nil", err)
	}
}

// TestShutdownDrainTimeoutIsAWarning: a request still running when the
// drain ends is left to be cut by the exit; Serve returns nil (main exits
// 0) and the cut is logged as a warning.
func TestShutdownDrainTimeoutIsAWarning(t *testing.T) {
	t.Parallel()
	contracts := newSlowService(t)
	e := newEnv(t, func(c *Config) {
		c.Services[SvcContracts] = contracts.srv.URL
		c.Shutdown.Drain = time.Nanosecond
	})
	_ = inFlight(e, "/api/contracts/5/pdf", e.iss.User(t, 7))
	<-contracts.entered
	if err := e.stop(); err != nil {
		t.Fatalf("Serve = %v, want nil after a drain timeout", err)
	}
	if d := cmp.Diff([]string{"shutting down: drain timed out, cutting the requests still running"}, e.logs.messages(t, "WARN")); d != "" {
		t.Errorf("warnings (-want +got):\n%s", d)
	}
	if errs := e.logs.messages(t, "ERROR"); len(errs) != 0 {
		t.Errorf("errors logged: %q", errs)
	}
}
