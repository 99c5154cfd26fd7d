//go:build bench

package api_test

// The CPU of POST /contacts/batch/upsert in the service, per row: 100 new
// contacts per call by id_property=erp_id, each with the four custom
// fields of deploy/e2e's BenchmarkContactBatchUpsert, through the
// handler (decode, checks, store, answer) in this process, against a real
// database. The service's CPU is this process's (the handler runs in
// it); PostgreSQL's is its backends' (from /proc). Profile it with
//
//	go test -tags bench -run '^$' -bench '^BenchmarkBatchUpsertCPU$' -benchtime 100x \
//	  -cpuprofile /tmp/batch.cpu ./internal/api/

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/opencrm/crm/pkg/proccpu"
)

// selfCPU is the user + system CPU this process has used.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func BenchmarkBatchUpsertCPU(b *testing.B) {
	const size = 100
	e := newEnv(b)
	for _, d := range []map[string]any{
		{"name": "erp_id", "label": "ERP id", "type": "text", "unique": true},
		{"name": "erp_tier", "label": "ERP tier", "type": "enum", "options": []map[string]any{
			{"value": "gold", "label": "Gold"}, {"value": "silver", "label": "Silver"}, {"value": "bronze", "label": "Bronze"}}},
		{"name": "credit_limit", "label": "Credit limit", "type": "number"},
		{"name": "customer_since", "label": "Customer since", "type": "date"},
	} {
		wantStatus(b, e.do(b, "POST", "/properties/contacts", e.admin, d), http.StatusCreated)
	}
	body := func(call int) []byte {
		inputs := make([]map[string]any, size)
		for k := range inputs {
			i := call*size + k
			inputs[k] = map[string]any{"first_name": fmt.Sprint("Erp", i), "last_name": fmt.Sprint("Customer", i),
				"email": fmt.Sprintf("batch%d@bench.test", i), "phone": fmt.Sprintf("+1 888 %07d", i),
				"status": "active", "source": "erp", "custom_fields": map[string]string{
					"erp_id":         fmt.Sprintf("ERP-%07d", i),
					"erp_tier":       []string{"gold", "silver", "bronze"}[i%3],
					"credit_limit":   fmt.Sprintf("%d.5", 1000+i%5000),
					"customer_since": time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC).AddDate(0, 0, i%2000).Format(time.DateOnly),
				}}
		}
		raw, _ := json.Marshal(map[string]any{"id_property": "erp_id", "inputs": inputs})
		return raw
	}
	ctx := context.Background()
	backends := func() time.Duration {
		rows, err := e.db.Query(ctx, `SELECT pid FROM pg_stat_activity WHERE datname = current_database()`)
		if err != nil {
			b.Fatal(err)
		}
		pids, err := pgx.CollectRows(rows, pgx.RowTo[int32])
		if err != nil {
			b.Fatal(err)
		}
		return proccpu.Sum(pids)
	}
	call := 0
	upsert := func(raw []byte) {
		req := httptest.NewRequest("POST", "/contacts/batch/upsert", bytes.NewReader(raw))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+e.admin)
		req.Header.Set("Idempotency-Key", fmt.Sprintf("bench-%d", call))
		rec := httptest.NewRecorder()
		e.h.ServeHTTP(rec, req)
		if rec.Code != 200 || bytes.Count(rec.Body.Bytes(), []byte(`"status":"created"`)) != size {
			b.Fatalf("upsert: %d %.300s", rec.Code, rec.Body)
		}
		call++
	}
	for range 3 { // warm the pool's connections and statement caches
		upsert(body(call))
	}
	bodies := make([][]byte, b.N)
	for i := range bodies {
		bodies[i] = body(call + i)
	}
	runtime.GC() // the bodies' garbage is not the calls'
	pg0, self0, t0 := backends(), selfCPU(), time.Now()
	b.ResetTimer()
	for i := range b.N {
		upsert(bodies[i])
	}
	b.StopTimer()
	wall, self, pg := time.Since(t0), selfCPU()-self0, backends()-pg0
	rows := float64(b.N * size)
	us := func(d time.Duration) float64 { return float64(d.Microseconds()) / rows }
	fmt.Fprintf(os.Stdout, "%d calls of %d: service CPU %.0f µs/row, PostgreSQL CPU %.0f µs/row, wall %.0f µs/row; load average %s\n",
		b.N, size, us(self), us(pg), us(wall), proccpu.LoadAvg())
	b.ReportMetric(us(self), "svc-µs/row")
	b.ReportMetric(us(pg), "pg-µs/row")
}
