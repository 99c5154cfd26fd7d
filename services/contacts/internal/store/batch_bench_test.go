//go:build bench

package store

// The batch upsert of new contacts against a raw COPY of the same rows,
// per call of 100:
//
//	go test -tags bench -run '^$' -bench BatchUpsertStatements -benchtime 1x -timeout 20m ./internal/store/

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/opencrm/crm/pkg/contract/propertyapi"
	"github.com/opencrm/crm/pkg/customfield"
	"github.com/opencrm/crm/pkg/db"
	"github.com/opencrm/crm/pkg/proccpu"
	"github.com/opencrm/crm/pkg/testdb"
	"github.com/opencrm/crm/services/contacts/internal/contacts"
)

// countingTracer counts the statements (queries and copies) a pool sends
// and times each kind (its first words) from send to end, the round trip
// included. The pool has one connection: one statement at a time.
type countingTracer struct {
	n     atomic.Int64
	mu    sync.Mutex
	start time.Time
	sql   string
	took  map[string]time.Duration
	// cpu is each kind's backend CPU, from the backend's schedstat (ns,
	// unlike /proc/<pid>/stat's ticks) at start and end.
	pid      uint32
	cpuStart time.Duration
	cpu      map[string]time.Duration
}

// schedCPU is the time process pid has run on a CPU (its schedstat's
// first field, in ns), 0 when it cannot be read.
func schedCPU(pid uint32) time.Duration {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/schedstat", pid))
	if err != nil {
		return 0
	}
	f := strings.Fields(string(raw))
	if len(f) == 0 {
		return 0
	}
	ns, _ := strconv.ParseInt(f[0], 10, 64)
	return time.Duration(ns)
}

func (t *countingTracer) TraceQueryStart(ctx context.Context, c *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	t.n.Add(1)
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.cpu != nil {
		t.pid = c.PgConn().PID()
		t.cpuStart = schedCPU(t.pid)
	}
	t.start, t.sql = time.Now(), strings.Join(strings.Fields(d.SQL), " ")
	if len(t.sql) > 70 {
		t.sql = t.sql[:70]
	}
	return ctx
}

func (t *countingTracer) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.took != nil {
		t.took[t.sql] += time.Since(t.start)
	}
	if t.cpu != nil {
		t.cpu[t.sql] += schedCPU(t.pid) - t.cpuStart
	}
}
func (t *countingTracer) TraceCopyFromStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceCopyFromStartData) context.Context {
	t.n.Add(1)
	return ctx
}
func (t *countingTracer) TraceCopyFromEnd(context.Context, *pgx.Conn, pgx.TraceCopyFromEndData) {}

// BenchmarkBatchUpsertStatements runs Service.UpsertContacts (the domain
// flow and this store, as POST /contacts/batch/upsert does after
// decoding) of 100 new contacts by id_property=erp_id, each with the four
// custom fields of deploy/e2e's BenchmarkContactBatchUpsert, on a pool of
// its own whose statements are counted and whose backends' CPU is read
// from /proc, and compares it with one COPY of the same number of rows
// (same columns and custom_fields) into contacts plus an INSERT … SELECT
// of their claims, before and after. One client: the figures are per
// call, not a throughput.
func BenchmarkBatchUpsertStatements(b *testing.B) {
	ctx := context.Background()
	calls := 20
	if v, err := strconv.Atoi(os.Getenv("CRM_BENCH_CALLS")); err == nil && v > 0 {
		calls = v
	}
	const size = 100
	admin := testdb.New(b, Schema, Migrate, MigrationSets...)
	props := customfield.Store{DB: admin, Stream: Stream}
	obj := customfield.Object{Name: propertyapi.Contacts, Table: "contacts"}
	for _, in := range []propertyapi.PropertyInput{
		{Name: "erp_id", Label: "ERP id", Type: customfield.Text, Unique: true},
		{Name: "erp_tier", Label: "Tier", Type: customfield.Enum, Options: []propertyapi.Option{{Value: "gold", Label: "Gold"}, {Value: "silver", Label: "Silver"}}},
		{Name: "credit_limit", Label: "Credit limit", Type: customfield.Number},
		{Name: "customer_since", Label: "Customer since", Type: customfield.Date},
	} {
		if _, err := props.Create(ctx, obj, in); err != nil {
			b.Fatal(err)
		}
	}
	u, err := url.Parse(admin.Config().ConnString())
	if err != nil {
		b.Fatal(err)
	}
	q := u.Query()
	q.Set("application_name", "batchbench")
	u.RawQuery = q.Encode()
	cfg, err := pgxpool.ParseConfig(u.String())
	if err != nil {
		b.Fatal(err)
	}
	cfg.ConnConfig.RuntimeParams["search_path"] = Schema + ",public"
	cfg.ConnConfig.RuntimeParams["timezone"] = "UTC"
	cfg.MaxConns = 1
	tracer := &countingTracer{}
	cfg.ConnConfig.Tracer = tracer
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(pool.Close)
	d := &db.DB{Pool: pool, Schema: Schema}
	svc, err := contacts.NewService(&Store{db: d, log: slog.Default()})
	if err != nil {
		b.Fatal(err)
	}
	values := func(i int) map[string]string {
		return map[string]string{"erp_id": fmt.Sprintf("ERP-%07d", i), "erp_tier": []string{"gold", "silver"}[i%2],
			"credit_limit": strconv.Itoa(1000 * (i % 50)), "customer_since": fmt.Sprintf("2020-%02d-%02d", 1+i%12, 1+i%28)}
	}
	inputs := func(from int) []contacts.ContactInput {
		out := make([]contacts.ContactInput, size)
		for k := range out {
			i := from + k
			raw, _ := json.Marshal(map[string]any{"first_name": "Erp", "last_name": fmt.Sprintf("Customer %d", i),
				"email": fmt.Sprintf("erp%d@example.test", i), "custom_fields": values(i)})
			if err := json.Unmarshal(raw, &out[k]); err != nil {
				b.Fatal(err)
			}
		}
		return out
	}
	backendCPU := func() time.Duration {
		rows, err := admin.Query(ctx, `SELECT pid FROM pg_stat_activity WHERE application_name = 'batchbench'`)
		if err != nil {
			b.Fatal(err)
		}
		pids, err := pgx.CollectRows(rows, pgx.RowTo[int32])
		if err != nil {
			b.Fatal(err)
		}
		return proccpu.Sum(pids)
	}
	type side struct {
		wall, cpu  time.Duration
		statements int64
	}
	measure := func(fn func()) side {
		n, cpu, start := tracer.n.Load(), backendCPU(), time.Now()
		fn()
		return side{time.Since(start), backendCPU() - cpu, tracer.n.Load() - n}
	}
	next := 0
	upsert := func() {
		ins := inputs(next)
		next += size
		done, err := svc.UpsertContacts(ctx, fmt.Sprintf("batchbench-%d", next), "erp_id", ins)
		if err != nil {
			b.Fatal(err)
		}
		for i, r := range done.Value {
			if r.Status != "created" {
				b.Fatalf("input %d: %s, want created", i, r.Status)
			}
		}
	}
	raw := func() {
		n := calls * size
		from := next
		next += n
		err := d.InTx(ctx, func(tx pgx.Tx) error {
			var maxID int64
			if err := tx.QueryRow(ctx, `SELECT coalesce(max(id), 0) FROM contacts`).Scan(&maxID); err != nil {
				return err
			}
			_, err := tx.CopyFrom(ctx, pgx.Identifier{"contacts"}, []string{"first_name", "last_name", "email", "status", "custom_fields"},
				pgx.CopyFromFunc(func() ([]any, error) {
					if n == 0 {
						return nil, nil
					}
					n--
					i := from + n
					cf, _ := json.Marshal(values(i))
					return []any{"Erp", fmt.Sprintf("Customer %d", i), fmt.Sprintf("erp%d@example.test", i), "active", cf}, nil
				}))
			if err != nil {
				return err
			}
			_, err = tx.Exec(ctx, `INSERT INTO custom_field_unique (object, name, value, record_id)
				SELECT 'contacts', 'erp_id', custom_fields ->> 'erp_id', id FROM contacts WHERE id > $1`, maxID)
			return err
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	for range 2 { // warm: the pool's connection, statement caches
		upsert()
	}
	b.ResetTimer()
	raw1 := measure(raw)
	tracer.took, tracer.cpu = map[string]time.Duration{}, map[string]time.Duration{}
	api := measure(func() {
		for range calls {
			upsert()
		}
	})
	took, cpu := tracer.took, tracer.cpu
	tracer.took, tracer.cpu = nil, nil
	raw2 := measure(raw)
	b.StopTimer()
	per := func(s side, n int) string {
		return fmt.Sprintf("%.1f statements, %.1f ms wall, %.1f ms PostgreSQL CPU", float64(s.statements)/float64(n),
			float64(s.wall.Microseconds())/1000/float64(n), float64(s.cpu.Microseconds())/1000/float64(n))
	}
	rawWall, rawCPU := (raw1.wall+raw2.wall)/2, (raw1.cpu+raw2.cpu)/2
	fmt.Printf("per call of %d new contacts (%d calls; load average %s):\n  upsert: %s\n  raw COPY + claims before: %s\n  raw COPY + claims after: %s\n"+
		"  upsert / raw COPY mean: wall %.2f×, PostgreSQL CPU %.2f×\n",
		size, calls, proccpu.LoadAvg(), per(api, calls), per(raw1, calls), per(raw2, calls),
		api.wall.Seconds()/rawWall.Seconds(), api.cpu.Seconds()/rawCPU.Seconds())
	kinds := make([]string, 0, len(took))
	for k := range took {
		kinds = append(kinds, k)
	}
	slices.SortFunc(kinds, func(a, b string) int { return int(took[b] - took[a]) })
	fmt.Println("  upsert's statements, ms per call: wall (round trip and reading the rows included), backend CPU:")
	for _, k := range kinds {
		fmt.Printf("    %6.2f %6.2f  %s\n", float64(took[k].Microseconds())/1000/float64(calls),
			float64(cpu[k].Microseconds())/1000/float64(calls), k)
	}
	// A plain single create without custom values (the installation has
	// the four fields): its statements and time.
	single := measure(func() {
		for range calls {
			var in contacts.ContactInput
			if err := json.Unmarshal([]byte(`{"first_name": "Single", "last_name": "Create"}`), &in); err != nil {
				b.Fatal(err)
			}
			if _, err := svc.CreateContact(ctx, in); err != nil {
				b.Fatal(err)
			}
		}
	})
	fmt.Printf("  single create without custom values: %s\n", per(single, calls))
	if os.Getenv("CRM_BENCH_EXPLAIN") != "" {
		// Where the INSERT of 100 rows spends its time (triggers
		// included), in a transaction rolled back.
		err := d.InTx(ctx, func(tx pgx.Tx) error {
			rows, err := tx.Query(ctx, `EXPLAIN (ANALYZE, BUFFERS) INSERT INTO contacts (first_name, last_name, email, status, custom_fields)
				SELECT 'Erp', 'Explain ' || g, 'explain' || g || '@example.test', 'active',
					jsonb_build_object('erp_id', 'X-' || g, 'erp_tier', 'gold', 'credit_limit', '1000', 'customer_since', '2020-01-01')
				FROM generate_series(1, 100) g`)
			if err != nil {
				return err
			}
			lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
			if err != nil {
				return err
			}
			for _, l := range lines {
				fmt.Println("    " + l)
			}
			return errors.New("rollback")
		})
		if err != nil && err.Error() != "rollback" {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(api.statements)/float64(calls), "statements/call")
	b.ReportMetric(api.wall.Seconds()/rawWall.Seconds(), "x-raw-wall")
	b.ReportMetric(api.cpu.Seconds()/rawCPU.Seconds(), "x-raw-pgcpu")
}
