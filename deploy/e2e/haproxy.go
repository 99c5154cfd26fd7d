package e2e

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// A stack started with Options.Replicas > 1 (or Options.HAProxy) runs
// each process as replicas named "<process>@<i>" (i from 1), each on a
// port of its own, behind one haproxy child process (named "haproxy") on
// the process's own port: Stack.URLs[name] and Stack.Gateway are
// HAProxy's frontends, Stack.URLs["<name>@<i>"] a replica's own address.
// HAProxy checks every replica's /readyz each second and takes one out
// after two failures (back after two successes), as make run REPLICAS=2
// does; it re-sends a request to another replica only when the
// connection could not be made, so no write is sent twice.

// ReplicaName is the process name of replica i (from 1) of name.
func ReplicaName(name string, i int) string { return fmt.Sprintf("%s@%d", name, i) }

// binaryName is the binary a process runs: a replica runs its process's.
func binaryName(name string) string {
	b, _, _ := strings.Cut(name, "@")
	return b
}

// Replicas lists the replica names of a process of a replicated stack.
func (s *Stack) Replicas(name string) []string {
	var out []string
	for i := 1; i <= s.replicas; i++ {
		out = append(out, ReplicaName(name, i))
	}
	return out
}

// startReplicated starts HAProxy, then replicas of every process in all;
// ports are the frontends' (the processes' usual ports in the stack).
func (s *Stack) startReplicated(ctx context.Context, all []string, ports map[string]int) error {
	for _, n := range all {
		for i := 1; i <= s.replicas; i++ {
			rn := ReplicaName(n, i)
			p, err := freePort()
			if err != nil {
				return err
			}
			s.URLs[rn] = fmt.Sprintf("http://127.0.0.1:%d", p)
			env := slices.Clone(s.env[n])
			for j, kv := range env {
				switch {
				case strings.HasPrefix(kv, "ADDR="):
					env[j] = fmt.Sprintf("ADDR=127.0.0.1:%d", p)
				case strings.HasPrefix(kv, "OPS_ADDR=") && i > 1:
					// Replica 1 keeps the stack's GatewayOps.
					op, err := freePort()
					if err != nil {
						return err
					}
					env[j] = fmt.Sprintf("OPS_ADDR=127.0.0.1:%d", op)
				}
			}
			s.env[rn] = env
		}
	}
	if err := s.startHAProxy(all, ports); err != nil {
		return err
	}
	for _, n := range all {
		for _, rn := range s.Replicas(n) {
			if err := s.StartProcess(ctx, rn); err != nil {
				return err
			}
		}
		if n == "identity" {
			for _, rn := range s.Replicas(n) {
				if err := s.WaitReady(ctx, rn); err != nil {
					return err
				}
			}
			if err := s.hardenAudit(ctx); err != nil {
				return err
			}
		}
	}
	for _, n := range all {
		for _, rn := range s.Replicas(n) {
			if err := s.WaitReady(ctx, rn); err != nil {
				return err
			}
		}
	}
	// Every frontend answers once HAProxy has seen its replicas up.
	for _, n := range all {
		if err := waitURL(ctx, s.URLs[n]+"/readyz", 30*time.Second); err != nil {
			return fmt.Errorf("e2e: HAProxy's %s frontend: %w\n%s", n, err, s.Logs("haproxy"))
		}
	}
	return nil
}

// HAProxyConfig is the configuration of a replicated stack's HAProxy.
func (s *Stack) HAProxyConfig() string { return s.haproxyCfg }

// HAProxyStats is the base URL of HAProxy's statistics page ("/;csv"
// for CSV) of a replicated stack.
func (s *Stack) HAProxyStats() string { return s.haproxyStats }

func (s *Stack) startHAProxy(all []string, ports map[string]int) error {
	var b strings.Builder
	b.WriteString(`global
	maxconn 4096
defaults
	mode http
	option redispatch
	retries 3
	timeout connect 2s
	timeout client 5m
	timeout server 5m
	timeout tunnel 1h
	timeout http-request 30s
	timeout http-keep-alive 30s
`)
	stats, err := freePort()
	if err != nil {
		return err
	}
	s.haproxyStats = fmt.Sprintf("http://127.0.0.1:%d", stats)
	fmt.Fprintf(&b, "\nlisten stats\n\tbind 127.0.0.1:%d\n\tstats enable\n\tstats uri /\n", stats)
	for _, n := range all {
		fmt.Fprintf(&b, "\nfrontend %s\n\tbind 127.0.0.1:%d\n", n, ports[n])
		if n == "gateway" {
			b.WriteString("\toption forwardfor\n")
		}
		fmt.Fprintf(&b, "\tdefault_backend %s_replicas\nbackend %s_replicas\n\tbalance roundrobin\n", n, n)
		b.WriteString("\toption httpchk GET /readyz\n\thttp-check expect status 200\n")
		for i := 1; i <= s.replicas; i++ {
			fmt.Fprintf(&b, "\tserver %s%d %s check inter 1s fall 2 rise 2\n", n, i, strings.TrimPrefix(s.URLs[ReplicaName(n, i)], "http://"))
		}
	}
	s.haproxyCfg = b.String()
	dir, err := os.MkdirTemp("", "crm-e2e-haproxy-")
	if err != nil {
		return err
	}
	cfg := filepath.Join(dir, "haproxy.cfg")
	if err := os.WriteFile(cfg, []byte(s.haproxyCfg), 0o600); err != nil {
		return err
	}
	if out, err := exec.Command("haproxy", "-c", "-q", "-f", cfg).CombinedOutput(); err != nil {
		return fmt.Errorf("e2e: haproxy -c: %v\n%s", err, out)
	}
	cmd := exec.Command("haproxy", "-db", "-f", cfg)
	buf := &bytes.Buffer{}
	w := &lockedWriter{w: buf}
	cmd.Stdout, cmd.Stderr = w, w
	cmd.SysProcAttr = procAttr()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("e2e: haproxy: %w (apt-get install haproxy)", err)
	}
	p := &Process{Name: "haproxy", cmd: cmd, done: make(chan struct{}), log: buf}
	go func() { _ = cmd.Wait(); close(p.done); _ = os.RemoveAll(dir) }()
	s.mu.Lock()
	s.procs["haproxy"] = p
	s.mu.Unlock()
	return nil
}

// waitURL polls u until it answers 200.
func waitURL(ctx context.Context, u string, within time.Duration) error {
	deadline := time.Now().Add(within)
	for {
		resp, err := http.Get(u)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not 200 after %s (%v)", u, within, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}
