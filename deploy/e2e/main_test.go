package e2e

import (
	"context"
	"flag"
	"fmt"
	"maps"
	"os"
	"testing"
	"time"
)

// stack is shared by every test of the package: starting the platform is
// the expensive part. Tests that stop a service are not parallel (they run
// before the parallel ones) and restore it before returning.
var stack *Stack

// traces receives the spans of every process. Tests run with tracing on,
// so every flow also exercises it; benchmarks start with it off (see
// BenchmarkTracingOverhead).
var traces *collector

// tracingEnv turns tracing on, exporting to traces within 100 ms.
func tracingEnv() map[string]string {
	return map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": traces.URL(), "OTEL_BSP_SCHEDULE_DELAY": "100"}
}

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(run(m))
}

func run(m *testing.M) int {
	// Building every binary cold on a loaded two-core machine can take
	// several minutes; the tests' own timeouts bound the rest.
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	bin, err := os.MkdirTemp("", "crm-e2e-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(bin)
	builtBin = bin
	defer closeFaultStack()
	if _, err := Build(ctx, bin); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	traces = newCollector()
	defer traces.Close()
	opts := Options{Render: true, Env: tracingEnv()}
	if f := flag.Lookup("test.bench"); f != nil && f.Value.String() != "" {
		// Benchmarks measure the platform, not the per-user quota.
		// The PDF benchmark renders 4 contracts at once as one user.
		opts.Env = map[string]string{"CRM_RATE_LIMIT_USER_PER_MINUTE": "0", "CRM_RATE_LIMIT_IP_PER_MINUTE": "0",
			"RENDER_USER_INFLIGHT": "100"}
	}
	maps.Copy(opts.Env, webhookEnv)
	stack, err = Start(ctx, bin, opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer stack.Close()
	if stack.Contract, err = LoadContract(stack.URLs["gateway"]); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	code := m.Run()
	// Every exchange the tests made must match the published OpenAPI
	// document (see Contract and docs/api.md): a route, method, status,
	// query parameter, content type or body field it does not describe is
	// a documentation bug that users would hit.
	if problems := stack.Contract.Problems(); len(problems) > 0 {
		fmt.Fprintf(os.Stderr, "OpenAPI contract: %d of the exchanges' shapes are not documented:\n", len(problems))
		for _, p := range problems {
			fmt.Fprintln(os.Stderr, "  "+p)
		}
		return 1
	}
	fmt.Printf("OpenAPI contract: %d exchanges checked against /openapi.json\n", stack.Contract.Seen())
	return code
}

// admin returns a client logged in as the bootstrap admin.
func admin(t *testing.T) *Client {
	t.Helper()
	c := stack.Client()
	tok, err := c.Login(AdminEmail, AdminPassword)
	if err != nil {
		t.Fatal(err)
	}
	return c.With(tok)
}

// must fails the test unless the call answered want.
func must(t *testing.T, want int) func(*Response, error) *Response {
	t.Helper()
	return func(r *Response, err error) *Response {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		if r.Status != want {
			t.Fatalf("status %d, want %d: %s", r.Status, want, r.Body)
		}
		return r
	}
}

// eventually retries f until it returns nil or 20 s pass (read models and
// retry jobs are asynchronous by design).
func eventually(t *testing.T, what string, f func() error) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %v", what, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
