// Package e2e starts the real platform — every service binary, the render
// worker and the gateway, each as its own process on free loopback ports,
// on a fresh database with one role per context — so tests and benchmarks
// exercise exactly what `make run` deploys, through the single gateway.
package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"
)

// Services in start order; identity first since the others fetch its JWKS
// and user snapshot at start-up.
var Services = []string{"identity", "contacts", "deals", "leads", "contracts", "intake", "mail", "webhooks"}

// Admin credentials of the bootstrap admin of every stack.
const (
	AdminEmail    = "admin@e2e.test"
	AdminPassword = "e2e-admin-password"
)

// Process is one running binary.
type Process struct {
	Name string
	Port int
	cmd  *exec.Cmd
	done chan struct{}
	log  *bytes.Buffer
}

// Stack is a running platform.
type Stack struct {
	// Gateway is the public base URL, e.g. http://127.0.0.1:41234/api.
	Gateway string
	// URLs of each process by name (base, without /api).
	URLs map[string]string
	// GatewayOps is the gateway's ops listener (/metrics, /healthz, /readyz).
	GatewayOps string
	// DatabaseURL is the fresh database (superuser), for assertions.
	DatabaseURL string
	// RedisURL is the logical Redis database reserved for the stack.
	RedisURL string
	// Contract, when loaded, checks every exchange made by Client.
	Contract *Contract
	// Faults is set when the stack was started with Options.Faults.
	Faults *Faults

	binDir   string
	env      map[string][]string
	mu       sync.Mutex
	procs    map[string]*Process
	redis    *RedisServer
	dropDB   func()
	database string
	// replicas is Options.Replicas for a stack behind HAProxy (haproxy.go).
	replicas     int
	haproxyCfg   string
	haproxyStats string
	// binDirs is Options.Binaries, changed by SetBinaries (skew.go).
	binDirs map[string]string
}

// Options tune a stack.
type Options struct {
	// Only starts these services (plus the gateway); empty means all built.
	Only []string
	// Render starts the render worker.
	Render bool
	// Env adds variables to every process.
	Env map[string]string
	// Faults routes every service-to-service URL and every service's
	// PostgreSQL connection through toxiproxy and gives the stack a
	// private Redis (Stack.Faults), for fault-injection tests.
	Faults bool
	// PrivateRedis gives the stack a Redis server of its own instead of
	// E2E_REDIS_URL, so several stacks can run side by side.
	PrivateRedis bool
	// Replicas runs that many of every process (gateway and render too)
	// behind a local HAProxy (haproxy.go); 0 or 1 is one, without HAProxy
	// unless HAProxy is set.
	Replicas int
	// HAProxy puts HAProxy in front of the processes even with one replica.
	HAProxy bool
	// DatabaseURLs replaces a service's DATABASE_URL (e.g. its schema on
	// another PostgreSQL server); the others use the stack's database.
	DatabaseURLs map[string]string
	// Binaries runs a process from the binaries in another directory
	// (process name → directory, e.g. the previous release's: skew.go);
	// the others run from Start's binDir.
	Binaries map[string]string
}

// RepoRoot finds the workspace root (the directory holding go.work).
func RepoRoot() (string, error) {
	_, file, _, _ := runtime.Caller(0)
	dir := filepath.Dir(file)
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.work")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("e2e: go.work not found")
		}
		dir = parent
	}
}

// Build compiles every binary into dir; it returns the names it built.
func Build(ctx context.Context, dir string) ([]string, error) {
	root, err := RepoRoot()
	if err != nil {
		return nil, err
	}
	var pkgs, names []string
	for _, name := range append(append([]string{}, Services...), "render") {
		if _, err := os.Stat(filepath.Join(root, "services", name, "cmd", name, "main.go")); err == nil {
			pkgs = append(pkgs, "./services/"+name+"/cmd/"+name)
			names = append(names, name)
		}
	}
	pkgs = append(pkgs, "./gateway/cmd/gateway")
	names = append(names, "gateway")
	args := append([]string{"build", "-o", dir + "/"}, pkgs...)
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("e2e: go build: %v\n%s", err, out)
	}
	return names, nil
}

// Start creates a database and starts the stack from binaries in binDir.
func Start(ctx context.Context, binDir string, opts Options) (*Stack, error) {
	s := &Stack{binDir: binDir, URLs: map[string]string{}, procs: map[string]*Process{}, env: map[string][]string{}}
	s.binDirs = maps.Clone(opts.Binaries)
	if err := s.createDatabase(ctx); err != nil {
		return nil, err
	}
	s.RedisURL = envOr("E2E_REDIS_URL", "redis://127.0.0.1:6379/14")
	if opts.Faults {
		f, err := startFaults(ctx)
		if err != nil {
			s.dropDB()
			return nil, err
		}
		s.Faults, s.RedisURL = f, f.Redis.URL()
	} else if opts.PrivateRedis {
		r, err := StartRedis(ctx)
		if err != nil {
			s.dropDB()
			return nil, err
		}
		s.redis, s.RedisURL = r, r.URL()
	}
	if err := flushRedis(ctx, s.RedisURL); err != nil {
		s.Close()
		return nil, err
	}

	names := opts.Only
	if len(names) == 0 {
		for _, n := range Services {
			if _, err := os.Stat(filepath.Join(binDir, n)); err == nil {
				names = append(names, n)
			}
		}
	}
	all := append(append([]string{}, names...), "gateway")
	if opts.Render {
		all = append(all, "render")
	}
	ports := map[string]int{}
	for _, n := range append(append([]string{}, Services...), "gateway", "render") {
		p, err := freePort()
		if err != nil {
			return nil, err
		}
		ports[n] = p
		s.URLs[n] = fmt.Sprintf("http://127.0.0.1:%d", p)
	}
	s.Gateway = s.URLs["gateway"] + "/api"
	opsPort, err := freePort()
	if err != nil {
		return nil, err
	}
	s.GatewayOps = fmt.Sprintf("http://127.0.0.1:%d", opsPort)
	// What every process is told: the services' own URLs, or the fault
	// proxies in front of them.
	peers := map[string]string{}
	for _, n := range Services {
		peers[n] = s.URLs[n]
		if s.Faults != nil {
			p, listen, err := s.Faults.proxy("http-"+n, fmt.Sprintf("127.0.0.1:%d", ports[n]))
			if err != nil {
				s.Close()
				return nil, err
			}
			s.Faults.HTTP[n] = p
			peers[n] = "http://" + listen
		}
	}
	secret := randHex(20)
	common := []string{
		"REDIS_URL=" + s.RedisURL,
		"LOG_LEVEL=" + envOr("E2E_LOG_LEVEL", "warn"),
		// No load balancer to leave: stop at once (tests stop and restart
		// services); the drain still lets requests in flight finish.
		"CRM_SHUTDOWN_DELAY=0",
		"CRM_INTERNAL_SECRET=" + secret,
		"CRM_SECRET_KEY=" + randHex(20),
		"CRM_ADMIN_EMAIL=" + AdminEmail,
		"CRM_ADMIN_PASSWORD=" + AdminPassword,
		"IDENTITY_URL=" + peers["identity"], "CONTACTS_URL=" + peers["contacts"],
		"LEADS_URL=" + peers["leads"], "DEALS_URL=" + peers["deals"],
		"CONTRACTS_URL=" + peers["contracts"], "INTAKE_URL=" + peers["intake"], "MAIL_URL=" + peers["mail"],
		"WEBHOOKS_URL=" + peers["webhooks"],
		"PATH=" + os.Getenv("PATH"), "HOME=" + os.TempDir(),
	}
	for k, v := range opts.Env {
		common = append(common, k+"="+v)
	}
	for _, n := range all {
		env := append([]string{}, common...)
		env = append(env, fmt.Sprintf("ADDR=127.0.0.1:%d", ports[n]))
		if n != "gateway" && n != "render" {
			dbURL := s.roleURL(n)
			if u, ok := opts.DatabaseURLs[n]; ok {
				dbURL = u
			}
			if s.Faults != nil {
				upstream, err := hostPort(dbURL)
				if err != nil {
					s.Close()
					return nil, err
				}
				p, listen, err := s.Faults.proxy("pg-"+n, upstream)
				if err != nil {
					s.Close()
					return nil, err
				}
				s.Faults.PG[n] = p
				dbURL = withHost(dbURL, listen)
			}
			env = append(env, "DATABASE_URL="+dbURL)
		}
		if n == "gateway" {
			env = append(env, fmt.Sprintf("OPS_ADDR=127.0.0.1:%d", opsPort))
		}
		s.env[n] = env
	}
	if opts.Replicas > 1 || opts.HAProxy {
		s.replicas = max(opts.Replicas, 1)
		if err := s.startReplicated(ctx, all, ports); err != nil {
			s.Close()
			return nil, err
		}
		return s, nil
	}
	for _, n := range all {
		if err := s.StartProcess(ctx, n); err != nil {
			s.Close()
			return nil, err
		}
		if n == "identity" {
			if err := s.WaitReady(ctx, n); err != nil {
				s.Close()
				return nil, err
			}
			if err := s.hardenAudit(ctx); err != nil {
				s.Close()
				return nil, err
			}
		}
	}
	for _, n := range all {
		if err := s.WaitReady(ctx, n); err != nil {
			s.Close()
			return nil, err
		}
	}
	return s, nil
}

// createDatabase makes a fresh database with one login role and schema per
// service, as make run does.
func (s *Stack) createDatabase(ctx context.Context) error {
	server := envOr("TEST_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable")
	admin, err := pgx.Connect(ctx, server)
	if err != nil {
		return fmt.Errorf("e2e: connect: %w", err)
	}
	defer admin.Close(ctx)
	s.database = "crme2e_" + randHex(6)
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+s.database); err != nil {
		return err
	}
	s.DatabaseURL = withDB(server, s.database)
	dbc, err := pgx.Connect(ctx, s.DatabaseURL)
	if err != nil {
		return err
	}
	defer dbc.Close(ctx)
	if _, err := dbc.Exec(ctx, "CREATE EXTENSION IF NOT EXISTS pg_trgm"); err != nil {
		return err
	}
	for _, n := range Services {
		role := "crm_" + n
		// Roles are cluster-wide: create once, reuse across stacks.
		_, _ = admin.Exec(ctx, fmt.Sprintf("DO $$ BEGIN IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '%s') THEN CREATE ROLE %s LOGIN; END IF; END $$", role, role))
		if _, err := dbc.Exec(ctx, fmt.Sprintf("CREATE SCHEMA %s AUTHORIZATION %s", n, role)); err != nil {
			return err
		}
	}
	s.dropDB = func() {
		c, err := pgx.Connect(context.Background(), server)
		if err != nil {
			return
		}
		defer c.Close(context.Background())
		_, _ = c.Exec(context.Background(), "DROP DATABASE IF EXISTS "+s.database+" WITH (FORCE)")
	}
	return nil
}

// hardenAudit runs deploy/postgres/harden.sql once identity has migrated,
// as the crm-db-harden Job does in Kubernetes: every stack runs with the
// audit log owned by a role identity does not log in as. Stacks start
// concurrently and the role is cluster-wide, so a lost race creating it
// is retried.
func (s *Stack) hardenAudit(ctx context.Context) error {
	root, err := RepoRoot()
	if err != nil {
		return err
	}
	sql, err := os.ReadFile(filepath.Join(root, "deploy", "postgres", "harden.sql"))
	if err != nil {
		return err
	}
	c, err := pgx.Connect(ctx, s.DatabaseURL)
	if err != nil {
		return err
	}
	defer c.Close(ctx)
	for attempt := 0; ; attempt++ {
		if _, err = c.Exec(ctx, string(sql)); err == nil || attempt == 2 {
			return err
		}
	}
}

func (s *Stack) roleURL(service string) string {
	u, _ := url.Parse(s.DatabaseURL)
	u.User = url.User("crm_" + service)
	return u.String()
}

// Client returns an API client for the gateway whose exchanges are checked
// against the OpenAPI document when Contract is set.
func (s *Stack) Client() *Client {
	c := NewClient(s.Gateway)
	if s.Contract != nil {
		c.Record = s.Contract.Record
	}
	return c
}

// StartProcess starts (or restarts) one process.
func (s *Stack) StartProcess(ctx context.Context, name string) error {
	bin := filepath.Join(s.processBinDir(name), binaryName(name))
	if _, err := os.Stat(bin); err != nil {
		return fmt.Errorf("e2e: %s is not built", name)
	}
	cmd := exec.Command(bin)
	cmd.Env = s.env[name]
	buf := &bytes.Buffer{}
	w := &lockedWriter{w: buf}
	cmd.Stdout, cmd.Stderr = w, w
	cmd.SysProcAttr = procAttr()
	if err := cmd.Start(); err != nil {
		return err
	}
	p := &Process{Name: name, cmd: cmd, done: make(chan struct{}), log: buf}
	go func() { _ = cmd.Wait(); close(p.done) }()
	s.mu.Lock()
	s.procs[name] = p
	s.mu.Unlock()
	return nil
}

// WaitReady polls /readyz until 200.
func (s *Stack) WaitReady(ctx context.Context, name string) error {
	deadline := time.Now().Add(60 * time.Second)
	s.mu.Lock()
	p := s.procs[name]
	s.mu.Unlock()
	for time.Now().Before(deadline) {
		select {
		case <-p.done:
			return fmt.Errorf("e2e: %s exited during start-up:\n%s", name, s.Logs(name))
		default:
		}
		resp, err := http.Get(s.URLs[name] + "/readyz")
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	return fmt.Errorf("e2e: %s not ready after 60 s:\n%s", name, s.Logs(name))
}

// Stop ends one process with SIGTERM (graceful) or SIGKILL.
func (s *Stack) Stop(name string, kill bool) {
	s.mu.Lock()
	p := s.procs[name]
	s.mu.Unlock()
	if p == nil {
		return
	}
	sig := syscall.SIGTERM
	if kill {
		sig = syscall.SIGKILL
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, sig)
	select {
	case <-p.done:
	case <-time.After(20 * time.Second):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	}
}

// Restart stops and starts a process and waits until it is ready.
func (s *Stack) Restart(ctx context.Context, name string) error {
	s.Stop(name, false)
	if err := s.StartProcess(ctx, name); err != nil {
		return err
	}
	return s.WaitReady(ctx, name)
}

// names lists the processes the stack started.
func (s *Stack) names() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Collect(maps.Keys(s.procs))
}

// Pid is the process id of a running process (0 if none): a test that
// expects a service to recover by itself checks it did not change.
func (s *Stack) Pid(name string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p := s.procs[name]; p != nil && p.cmd.Process != nil {
		return p.cmd.Process.Pid
	}
	return 0
}

// Logs returns what a process printed (last 8 KB).
func (s *Stack) Logs(name string) string {
	s.mu.Lock()
	p := s.procs[name]
	s.mu.Unlock()
	if p == nil {
		return ""
	}
	lw := p.cmd.Stdout.(*lockedWriter)
	lw.mu.Lock()
	defer lw.mu.Unlock()
	b := p.log.Bytes()
	if len(b) > 8192 {
		b = b[len(b)-8192:]
	}
	return string(b)
}

// Close stops every process and drops the database.
func (s *Stack) Close() {
	names := s.names()
	var wg sync.WaitGroup
	for _, n := range names {
		wg.Add(1)
		go func() { defer wg.Done(); s.Stop(n, false) }()
	}
	wg.Wait()
	if s.Faults != nil {
		s.Faults.Close()
	}
	if s.redis != nil {
		s.redis.Stop()
	}
	if s.dropDB != nil {
		s.dropDB()
	}
}

type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

// flushRedis empties the stack's logical database: streams, queues and
// rate-limit counters of an earlier run must not leak into this one.
func flushRedis(ctx context.Context, u string) error {
	opt, err := redis.ParseURL(u)
	if err != nil {
		return err
	}
	rdb := redis.NewClient(opt)
	defer rdb.Close()
	return rdb.FlushDB(ctx).Err()
}

func freePort() (int, error) {
	portsMu.Lock()
	defer portsMu.Unlock()
	for range 1000 {
		p := minPort + mrand.IntN(maxPort-minPort)
		if portsGiven[p] {
			continue
		}
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
		if err != nil {
			continue // taken
		}
		_ = ln.Close()
		portsGiven[p] = true
		return p, nil
	}
	return 0, errors.New("e2e: no free port")
}

// Ports for the stacks' processes come from below Linux's ephemeral range
// (32768–60999), which the kernel hands to outgoing connections: a port
// picked there with ":0" was sometimes taken by a connection between the
// pick and the service's bind. Each port is given out once per test
// process.
const minPort, maxPort = 20000, 32768

var (
	portsMu    sync.Mutex
	portsGiven = map[int]bool{}
)

func withDB(server, name string) string {
	u, err := url.Parse(server)
	if err != nil {
		return server
	}
	u.Path = "/" + name
	return u.String()
}

func envOr(k, def string) string {
	if v := strings.TrimSpace(os.Getenv(k)); v != "" {
		return v
	}
	return def
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
