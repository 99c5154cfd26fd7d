package e2e

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os/exec"
	"strconv"
	"syscall"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	toxiclient "github.com/Shopify/toxiproxy/v2/client"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"github.com/rs/zerolog"
)

// Faults is what a stack started with Options.Faults offers for injecting
// failures between its real processes: every service-to-service URL and
// every service's PostgreSQL connection runs through a toxiproxy listener
// (toxiproxy's server in this process, driven through its HTTP API with
// its client, no Docker), and Redis is a private redis-server that a test
// may stop and start without touching the shared one.
type Faults struct {
	// API is the toxiproxy client.
	API *toxiclient.Client
	// HTTP maps a service to the proxy every other process reaches it by.
	HTTP map[string]*toxiclient.Proxy
	// PG maps a service to the proxy between it and PostgreSQL.
	PG map[string]*toxiclient.Proxy
	// Redis is the stack's private Redis.
	Redis *RedisServer

	srv  *toxiproxy.ApiServer
	http *http.Server
}

// startFaults starts toxiproxy's API on a free loopback port and a private
// Redis; proxies are added by proxy.
func startFaults(ctx context.Context) (*Faults, error) {
	f := &Faults{HTTP: map[string]*toxiclient.Proxy{}, PG: map[string]*toxiclient.Proxy{}}
	var err error
	if f.Redis, err = StartRedis(ctx); err != nil {
		return nil, err
	}
	f.srv = toxiproxy.NewServer(toxiproxy.NewMetricsContainer(prometheus.NewRegistry()), zerolog.Nop())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		f.Close()
		return nil, err
	}
	f.http = &http.Server{Handler: f.srv.Routes(), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = f.http.Serve(ln) }()
	f.API = toxiclient.NewClient("http://" + ln.Addr().String())
	return f, nil
}

// proxy creates a proxy named name in front of upstream (host:port) and
// returns the host:port it listens on.
func (f *Faults) proxy(name, upstream string) (*toxiclient.Proxy, string, error) {
	port, err := freePort()
	if err != nil {
		return nil, "", err
	}
	listen := fmt.Sprintf("127.0.0.1:%d", port)
	p, err := f.API.CreateProxy(name, listen, upstream)
	if err != nil {
		return nil, "", fmt.Errorf("e2e: toxiproxy %s: %w", name, err)
	}
	return p, listen, nil
}

// Heal removes every toxic and enables every proxy.
func (f *Faults) Heal() error { return f.API.ResetState() }

// Close stops the proxies, the API and the private Redis.
func (f *Faults) Close() {
	if f.http != nil {
		_ = f.http.Close()
	}
	if f.srv != nil {
		f.srv.Collection.Clear()
	}
	if f.Redis != nil {
		f.Redis.Stop()
	}
}

// RedisServer is a redis-server child process on a free loopback port,
// without persistence.
type RedisServer struct {
	Port int
	cmd  *exec.Cmd
	done chan struct{}
}

// StartRedis starts a private Redis and waits until it answers PING.
func StartRedis(ctx context.Context) (*RedisServer, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	r := &RedisServer{Port: port}
	return r, r.Start(ctx)
}

// URL is the server's database 0.
func (r *RedisServer) URL() string { return fmt.Sprintf("redis://127.0.0.1:%d/0", r.Port) }

// Start (re)starts the server on its port.
func (r *RedisServer) Start(ctx context.Context) error {
	cmd := exec.Command("redis-server", "--port", strconv.Itoa(r.Port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--protected-mode", "yes")
	cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
	cmd.SysProcAttr = procAttr()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("e2e: redis-server: %w", err)
	}
	r.cmd, r.done = cmd, make(chan struct{})
	go func() { _ = cmd.Wait(); close(r.done) }()
	rdb := redis.NewClient(&redis.Options{Addr: fmt.Sprintf("127.0.0.1:%d", r.Port)})
	defer rdb.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if err := rdb.Ping(ctx).Err(); err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			r.Stop()
			return errors.New("e2e: redis-server did not answer PING within 10 s")
		}
		select {
		case <-r.done:
			return errors.New("e2e: redis-server exited at start")
		case <-ctx.Done():
			r.Stop()
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Stop kills the server (SIGKILL: an outage, not a shutdown).
func (r *RedisServer) Stop() {
	if r.cmd == nil || r.cmd.Process == nil {
		return
	}
	select {
	case <-r.done:
		return
	default:
	}
	_ = syscall.Kill(-r.cmd.Process.Pid, syscall.SIGKILL)
	<-r.done
}

// hostPort returns the host:port of a URL.
func hostPort(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", err
	}
	if u.Port() == "" {
		return u.Hostname() + ":5432", nil
	}
	return u.Host, nil
}

// withHost returns raw with its host:port replaced.
func withHost(raw, host string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	u.Host = host
	return u.String()
}
