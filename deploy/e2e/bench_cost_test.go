package e2e

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/opencrm/crm/pkg/proccpu"
)

// costMeter reads what a stack's processes have spent: the CPU time of its
// Go processes, its private Redis and its PostgreSQL backends (from /proc),
// and the bytes its Go processes allocated (go_memstats_alloc_bytes_total
// from their /metrics). Unlike throughput, CPU time per request barely
// moves with the machine's load, so it tells a 5 % cost apart where a
// throughput ratio cannot.
type costMeter struct {
	s  *Stack
	db *pgx.Conn // the stack's database, to find its backends
}

// cost is a reading of a costMeter: CPU time per process id (pg holds
// the PostgreSQL backends'), bytes allocated per Go process.
type cost struct {
	cpu   map[int]time.Duration
	pg    map[int]bool
	alloc map[string]float64
}

func newCostMeter(b *testing.B, s *Stack) *costMeter {
	b.Helper()
	db, err := pgx.Connect(context.Background(), s.DatabaseURL)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = db.Close(context.Background()) })
	return &costMeter{s: s, db: db}
}

func (m *costMeter) read(b *testing.B) cost {
	b.Helper()
	c := cost{cpu: map[int]time.Duration{}, pg: map[int]bool{}, alloc: map[string]float64{}}
	rows, err := m.db.Query(context.Background(),
		`SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()`)
	if err != nil {
		b.Fatal(err)
	}
	pids, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	if err != nil {
		b.Fatal(err)
	}
	for _, p := range pids {
		c.cpu[int(p)], c.pg[int(p)] = proccpu.Of(int(p)), true
	}
	if m.s.redis != nil && m.s.redis.cmd != nil {
		c.cpu[m.s.redis.cmd.Process.Pid] = proccpu.Of(m.s.redis.cmd.Process.Pid)
	}
	for _, name := range m.s.names() {
		pid := m.s.Pid(name)
		c.cpu[pid] = proccpu.Of(pid)
		u := m.s.URLs[name] + "/metrics"
		if name == "gateway" {
			u = m.s.GatewayOps + "/metrics"
		}
		c.alloc[name] = allocated(b, u)
	}
	return c
}

// since is what was spent from c0 to c: CPU time in all and in
// PostgreSQL, and bytes allocated; a process that started in between
// counts whole.
func (c cost) since(c0 cost) (cpu, pg time.Duration, alloc float64) {
	for pid, t := range c.cpu {
		cpu += t - c0.cpu[pid]
		if c.pg[pid] {
			pg += t - c0.cpu[pid]
		}
	}
	for name, n := range c.alloc {
		alloc += n - c0.alloc[name]
	}
	return cpu, pg, alloc
}

// allocated reads go_memstats_alloc_bytes_total from a Prometheus endpoint.
func allocated(b *testing.B, url string) float64 {
	b.Helper()
	resp, err := http.Get(url)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "go_memstats_alloc_bytes_total "); ok {
			n, err := strconv.ParseFloat(v, 64)
			if err != nil {
				b.Fatalf("%s: %q: %v", url, v, err)
			}
			return n
		}
	}
	b.Fatalf("%s: no go_memstats_alloc_bytes_total", url)
	return 0
}

// spent accumulates the cost of a workload's requests on one stack.
type spent struct {
	cpu, pg  time.Duration
	alloc    float64
	requests float64
}

func (s *spent) add(cpu, pg time.Duration, alloc, requests float64) {
	s.cpu, s.pg, s.alloc, s.requests = s.cpu+cpu, s.pg+pg, s.alloc+alloc, s.requests+requests
}

// perRequest formats CPU µs (all, and outside PostgreSQL) and allocated KB
// per request, with their ratios to base's when base is set.
func (s spent) perRequest(base *spent) (cpu, app, alloc string) {
	us := func(d time.Duration, n float64) float64 { return d.Seconds() * 1e6 / n }
	c, p, a := us(s.cpu, s.requests), us(s.cpu-s.pg, s.requests), s.alloc/1024/s.requests
	cpu, app, alloc = fmt.Sprintf("%.0f", c), fmt.Sprintf("%.0f", p), fmt.Sprintf("%.1f", a)
	if base != nil {
		cpu += fmt.Sprintf(" (%.3f)", c/us(base.cpu, base.requests))
		app += fmt.Sprintf(" (%.3f)", p/us(base.cpu-base.pg, base.requests))
		alloc += fmt.Sprintf(" (%.2f)", a/(base.alloc/1024/base.requests))
	}
	return cpu, app, alloc
}
