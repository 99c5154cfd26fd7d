package httpx

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/opencrm/crm/pkg/buildinfo"
	"github.com/opencrm/crm/pkg/config"
)

// get sends one request on a new connection and reads the answer.
func get(t *testing.T, url string) (int, map[string]any, bool) {
	t.Helper()
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := client.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	var body map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil && !errors.Is(err, io.EOF) {
		t.Fatalf("GET %s: body: %v", url, err)
	}
	return resp.StatusCode, body, resp.Close
}

// lockedBuffer collects log output written from the server's goroutine.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// slowAPI answers /slow once the test releases it (entered tells when the
// request is in the handler) and /things at once.
func slowAPI(entered chan<- struct{}, release <-chan struct{}) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /slow", func(w http.ResponseWriter, r *http.Request) {
		entered <- struct{}{}
		<-release
		JSON(w, http.StatusOK, map[string]string{"slow": "done"})
	})
	mux.HandleFunc("GET /things", func(w http.ResponseWriter, r *http.Request) {
		JSON(w, http.StatusOK, map[string]string{"things": "ok"})
	})
	return mux
}

// TestShutdownDelaysThenDrains: once told to stop, the server first keeps
// serving with /readyz at 503 (load balancers stop sending), then closes
// the listener and lets the request in flight finish with its 200; Serve
// returns nil. The test ends the delay itself, so no timer decides anything.
func TestShutdownDelaysThenDrains(t *testing.T) {
	t.Parallel()
	ops, err := NewOps()
	if err != nil {
		t.Fatal(err)
	}
	entered, release := make(chan struct{}, 1), make(chan struct{})
	delayStarted, endDelay := make(chan struct{}), make(chan time.Time)
	listenerClosed := make(chan struct{})
	var delayAsked time.Duration
	s := &Server{
		Handler:  ops.Handler(slowAPI(entered, release)),
		Shutdown: Shutdown{Delay: time.Hour, Drain: time.Minute},
		Log:      slog.New(slog.NewTextHandler(io.Discard, nil)),
		after: func(d time.Duration) <-chan time.Time {
			delayAsked = d
			close(delayStarted)
			return endDelay
		},
		onShutdown: func() { close(listenerClosed) },
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	served := make(chan error, 1)
	go func() { served <- s.Serve(ctx, ln) }()

	if status, _, _ := get(t, base+"/readyz"); status != http.StatusOK {
		t.Fatalf("readyz before shutdown = %d", status)
	}
	type answer struct {
		Status int
		Body   map[string]any
	}
	inFlight := make(chan answer, 1)
	go func() {
		resp, err := http.Get(base + "/slow")
		if err != nil {
			inFlight <- answer{Status: -1, Body: map[string]any{"error": err.Error()}}
			return
		}
		defer resp.Body.Close()
		var b map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&b)
		inFlight <- answer{resp.StatusCode, b}
	}()
	<-entered

	cancel() // SIGTERM
	select {
	case <-delayStarted:
	case err := <-served:
		t.Fatalf("Serve returned (%v) without the shutdown delay", err)
	}
	if delayAsked != time.Hour {
		t.Errorf("delay = %s, want the configured 1h", delayAsked)
	}
	status, body, _ := get(t, base+"/readyz")
	if status != http.StatusServiceUnavailable {
		t.Errorf("readyz during the delay = %d, want 503", status)
	}
	if d := cmp.Diff(map[string]any{"status": "shutting_down"}, body); d != "" {
		t.Errorf("readyz body during the delay (-want +got):\n%s", d)
	}
	status, body, closed := get(t, base+"/things")
	if status != http.StatusOK || !closed {
		t.Errorf("request during the delay = %d (connection closed: %v), want 200 and Connection: close", status, closed)
	}
	if d := cmp.Diff(map[string]any{"things": "ok"}, body); d != "" {
		t.Errorf("body during the delay (-want +got):\n%s", d)
	}

	close(endDelay)
	<-listenerClosed
	if c, err := net.Dial("tcp", ln.Addr().String()); err == nil {
		c.Close()
		t.Error("the listener still accepts connections while draining")
	}
	close(release)
	got := <-inFlight
	if d := cmp.Diff(answer{http.StatusOK, map[string]any{"slow": "done"}}, got); d != "" {
		t.Errorf("request in flight when shutdown started (-want +got):\n%s", d)
	}
	if err := <-served; err != nil {
		t.Errorf("Serve = %v, want nil", err)
	}
}

// TestShutdownDrainTimeoutIsAWarning: a request still running when the
// drain ends is cut; that is logged as a warning and Serve returns nil, so
// the process does not exit 1 for stopping as asked.
func TestShutdownDrainTimeoutIsAWarning(t *testing.T) {
	t.Parallel()
	entered, release := make(chan struct{}, 1), make(chan struct{})
	defer close(release)
	logs := &lockedBuffer{}
	s := &Server{
		Handler:  slowAPI(entered, release),
		Shutdown: Shutdown{Delay: 0, Drain: time.Nanosecond},
		Log:      slog.New(slog.NewJSONHandler(logs, nil)),
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- s.Serve(ctx, ln) }()
	cut := make(chan error, 1)
	go func() {
		resp, err := http.Get("http://" + ln.Addr().String() + "/slow")
		if err == nil {
			_, err = io.ReadAll(resp.Body)
			resp.Body.Close()
		}
		cut <- err
	}()
	<-entered
	cancel()
	if err := <-served; err != nil {
		t.Fatalf("Serve = %v, want nil after a drain timeout", err)
	}
	if err := <-cut; err == nil {
		t.Error("the request still running after the drain was answered, want its connection closed")
	}
	var warnings []string
	for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		var rec struct{ Level, Msg string }
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		if rec.Level == "WARN" {
			warnings = append(warnings, rec.Msg)
		}
	}
	if d := cmp.Diff([]string{"shutting down: drain timed out, cutting the requests still running"}, warnings); d != "" {
		t.Errorf("warnings (-want +got):\n%s", d)
	}
}

// TestReadyzOptionalChecks: a failing optional check is reported but the
// process stays ready; a failing required one makes /readyz 503. Both show
// in the dependency_up gauge, beside the release the process runs.
func TestReadyzOptionalChecks(t *testing.T) {
	t.Parallel()
	ok := func(context.Context) error { return nil }
	down := func(context.Context) error { return errors.New("connection refused") }
	tests := []struct {
		name        string
		checks      []Check
		wantStatus  int
		wantBody    map[string]any
		wantMetrics []string
	}{
		{
			name:        "all up",
			checks:      []Check{{Name: "postgres", Fn: ok}, {Name: "redis", Fn: ok, Optional: true}},
			wantStatus:  200,
			wantBody:    map[string]any{"status": "ok", "checks": map[string]any{"postgres": "ok", "redis": "ok"}},
			wantMetrics: []string{`dependency_up{dependency="postgres"} 1`, `dependency_up{dependency="redis"} 1`},
		},
		{
			name:        "optional down",
			checks:      []Check{{Name: "postgres", Fn: ok}, {Name: "redis", Fn: down, Optional: true}},
			wantStatus:  200,
			wantBody:    map[string]any{"status": "ok", "checks": map[string]any{"postgres": "ok", "redis": "unavailable"}},
			wantMetrics: []string{`dependency_up{dependency="postgres"} 1`, `dependency_up{dependency="redis"} 0`},
		},
		{
			name:        "required down",
			checks:      []Check{{Name: "postgres", Fn: down}, {Name: "redis", Fn: ok, Optional: true}},
			wantStatus:  503,
			wantBody:    map[string]any{"status": "unavailable", "checks": map[string]any{"postgres": "unavailable", "redis": "ok"}},
			wantMetrics: []string{`dependency_up{dependency="postgres"} 0`, `dependency_up{dependency="redis"} 1`},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ops, err := NewOps(tc.checks...)
			if err != nil {
				t.Fatal(err)
			}
			srv := httptest.NewServer(ops.Handler(NotFoundHandler()))
			defer srv.Close()
			status, body, _ := get(t, srv.URL+"/readyz")
			if status != tc.wantStatus {
				t.Errorf("status = %d, want %d", status, tc.wantStatus)
			}
			if d := cmp.Diff(tc.wantBody, body); d != "" {
				t.Errorf("body (-want +got):\n%s", d)
			}
			resp, err := http.Get(srv.URL + "/metrics")
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			metrics, _ := io.ReadAll(resp.Body)
			build := `crm_build_info{version="` + buildinfo.Version() + `"} 1`
			for _, want := range append(tc.wantMetrics, build) {
				if !strings.Contains(string(metrics), want) {
					t.Errorf("metrics lack %q", want)
				}
			}
		})
	}
}

// TestShutdownSettings: CRM_SHUTDOWN_DELAY and CRM_DRAIN_TIMEOUT, their
// defaults and the values refused at start-up.
func TestShutdownSettings(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		env     map[string]string
		want    Shutdown
		wantErr string
	}{
		{"defaults", nil, Shutdown{Delay: 5 * time.Second, Drain: 40 * time.Second}, ""},
		{"set", map[string]string{"CRM_SHUTDOWN_DELAY": "0s", "CRM_DRAIN_TIMEOUT": "90s"}, Shutdown{Delay: 0, Drain: 90 * time.Second}, ""},
		{"negative delay", map[string]string{"CRM_SHUTDOWN_DELAY": "-1s"}, Shutdown{}, "CRM_SHUTDOWN_DELAY"},
		{"zero drain", map[string]string{"CRM_DRAIN_TIMEOUT": "0s"}, Shutdown{}, "CRM_DRAIN_TIMEOUT"},
		{"not a duration", map[string]string{"CRM_DRAIN_TIMEOUT": "soon"}, Shutdown{}, "CRM_DRAIN_TIMEOUT"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var got Shutdown
			err := config.ParseMap(&got, tc.env)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Errorf("error = %v, want one naming %s", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("settings (-want +got):\n%s", d)
			}
		})
	}
}
