package idempotency_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"

	"github.com/opencrm/crm/pkg/db"
	"github.com/opencrm/crm/pkg/idempotency"
	"github.com/opencrm/crm/pkg/problem"
	"github.com/opencrm/crm/pkg/testdb"
)

// recorder is a RunMany fn that answers 201 {"key":...,"run":n} for every
// call it runs and remembers which calls ran.
type recorder struct {
	mu    sync.Mutex
	runs  int
	todos [][]int
	calls []idempotency.Call
}

func (r *recorder) fn(calls []idempotency.Call) func(tx pgx.Tx, todo []int) ([]idempotency.Answer, error) {
	return func(tx pgx.Tx, todo []int) ([]idempotency.Answer, error) {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.todos = append(r.todos, append([]int(nil), todo...))
		out := make([]idempotency.Answer, len(todo))
		for j, i := range todo {
			r.runs++
			out[j] = idempotency.Answer{Status: http.StatusCreated, Body: map[string]any{"key": calls[i].Key, "run": r.runs}}
		}
		return out, nil
	}
}

func ok(body string, replayed bool) idempotency.Outcome {
	return idempotency.Outcome{Result: idempotency.Result{Status: 201, Body: json.RawMessage(body), Replayed: replayed}}
}

func reused() idempotency.Outcome {
	return idempotency.Outcome{Err: problem.Conflict("idempotency_key_reused", "this Idempotency-Key was used with a different request")}
}

func storedKeys(t *testing.T, d *db.DB) map[string]string {
	t.Helper()
	rows, err := d.Query(context.Background(), `SELECT key, convert_from(response, 'UTF8') FROM idempotency_keys`)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for rows.Next() {
		var k, v string
		if err := rows.Scan(&k, &v); err != nil {
			t.Fatal(err)
		}
		out[k] = v
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestRunManyRunsOnceAndReplays(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := testdb.New(t, "idemtest", idempotency.Migrate, idempotency.Migrations)
	calls := []idempotency.Call{
		{Key: "a", Request: map[string]string{"name": "A"}},
		{Key: "b", Request: map[string]string{"name": "B"}},
		{Key: "c", Request: 3},
	}
	var rec recorder
	got, err := idempotency.RunMany(ctx, d, calls, rec.fn(calls))
	if err != nil {
		t.Fatal(err)
	}
	want := []idempotency.Outcome{
		ok(`{"key":"a","run":1}`, false),
		ok(`{"key":"b","run":2}`, false),
		ok(`{"key":"c","run":3}`, false),
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("first RunMany (-want +got):\n%s", diff)
	}
	wantStored := map[string]string{"a": `{"key":"a","run":1}`, "b": `{"key":"b","run":2}`, "c": `{"key":"c","run":3}`}
	if diff := cmp.Diff(wantStored, storedKeys(t, d)); diff != "" {
		t.Fatalf("stored answers (-want +got):\n%s", diff)
	}

	// The retry replays every answer byte for byte and runs nothing.
	got, err = idempotency.RunMany(ctx, d, calls, rec.fn(calls))
	if err != nil {
		t.Fatal(err)
	}
	for i := range want {
		want[i].Replayed = true
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("retry (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([][]int{{0, 1, 2}}, rec.todos); diff != "" {
		t.Fatalf("fn calls (-want +got):\n%s", diff)
	}

	// Run sees the batch's answers, and RunMany sees Run's.
	res, err := idempotency.Run(ctx, d, "b", map[string]string{"name": "B"}, func(pgx.Tx) (int, any, error) {
		t.Fatal("Run ran a key stored by RunMany")
		return 0, nil, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(idempotency.Result{Status: 201, Body: json.RawMessage(`{"key":"b","run":2}`), Replayed: true}, res); diff != "" {
		t.Fatalf("Run after RunMany (-want +got):\n%s", diff)
	}
	if _, err := idempotency.Run(ctx, d, "single", "x", func(pgx.Tx) (int, any, error) { return 202, "from Run", nil }); err != nil {
		t.Fatal(err)
	}
	single := []idempotency.Call{{Key: "single", Request: "x"}}
	got, err = idempotency.RunMany(ctx, d, single, rec.fn(single))
	if err != nil {
		t.Fatal(err)
	}
	wantSingle := []idempotency.Outcome{{Result: idempotency.Result{Status: 202, Body: json.RawMessage(`"from Run"`), Replayed: true}}}
	if diff := cmp.Diff(wantSingle, got); diff != "" {
		t.Fatalf("RunMany after Run (-want +got):\n%s", diff)
	}
}

// TestRunManyPerCallOutcomes: conflicts and duplicates are answered per
// call while the other calls of the batch run.
func TestRunManyPerCallOutcomes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := testdb.New(t, "idemtest", idempotency.Migrate, idempotency.Migrations)
	tests := []struct {
		name string
		// stored is answered by Run before the batch: key → request.
		stored   map[string]any
		calls    []idempotency.Call
		wantTodo [][]int
		want     []idempotency.Outcome
	}{
		{
			name:   "key reused with a different request",
			stored: map[string]any{"reused": "first"},
			calls: []idempotency.Call{
				{Key: "reused", Request: "second"},
				{Key: "fresh", Request: "x"},
				{Key: "reused", Request: "first"},
			},
			wantTodo: [][]int{{1}},
			want: []idempotency.Outcome{
				reused(),
				ok(`{"key":"fresh","run":1}`, false),
				ok(`"stored reused"`, true),
			},
		},
		{
			name: "duplicate key within the batch",
			calls: []idempotency.Call{
				{Key: "dup", Request: 1},
				{Key: "other", Request: 1},
				{Key: "dup", Request: 1},
				{Key: "dup", Request: 2},
			},
			wantTodo: [][]int{{0, 1}},
			want: []idempotency.Outcome{
				ok(`{"key":"dup","run":1}`, false),
				ok(`{"key":"other","run":2}`, false),
				ok(`{"key":"dup","run":1}`, true),
				reused(),
			},
		},
		{
			name:   "everything stored: fn is not called",
			stored: map[string]any{"s1": 1, "s2": 2},
			calls: []idempotency.Call{
				{Key: "s2", Request: 2},
				{Key: "s1", Request: 1},
				{Key: "s1", Request: 1},
			},
			want: []idempotency.Outcome{
				ok(`"stored s2"`, true),
				ok(`"stored s1"`, true),
				ok(`"stored s1"`, true),
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// Keys are prefixed per case: the cases share one database.
			prefix := tc.name + "/"
			for k, req := range tc.stored {
				if _, err := idempotency.Run(ctx, d, prefix+k, req, func(pgx.Tx) (int, any, error) {
					return 201, "stored " + k, nil
				}); err != nil {
					t.Fatal(err)
				}
			}
			calls := make([]idempotency.Call, len(tc.calls))
			for i, c := range tc.calls {
				calls[i] = idempotency.Call{Key: prefix + c.Key, Request: c.Request}
			}
			var rec recorder
			got, err := idempotency.RunMany(ctx, d, calls, func(tx pgx.Tx, todo []int) ([]idempotency.Answer, error) {
				// Answer with the unprefixed key, so the table reads plainly.
				return rec.fn(tc.calls)(tx, todo)
			})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("outcomes (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantTodo, rec.todos); diff != "" {
				t.Errorf("todo (-want +got):\n%s", diff)
			}
			for _, o := range got {
				if o.Err != nil {
					if p := problem.From(o.Err); p.Status != http.StatusConflict {
						t.Errorf("conflict status = %d", p.Status)
					}
				}
			}
		})
	}
}

func TestRunManyErrors(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := testdb.New(t, "idemtest", idempotency.Migrate, idempotency.Migrations)
	never := func(pgx.Tx, []int) ([]idempotency.Answer, error) {
		t.Error("fn ran")
		return nil, nil
	}
	if _, err := idempotency.RunMany(ctx, d, []idempotency.Call{{Key: "k", Request: 1}, {Key: "", Request: 2}}, never); err == nil {
		t.Error("empty key: no error")
	}
	if _, err := idempotency.RunMany(ctx, d, []idempotency.Call{{Key: "k", Request: func() {}}}, never); err == nil {
		t.Error("unencodable request: no error")
	}
	got, err := idempotency.RunMany(ctx, d, nil, never)
	if err != nil || len(got) != 0 {
		t.Errorf("no calls: %v, %v", got, err)
	}

	calls := []idempotency.Call{{Key: "x", Request: 1}, {Key: "y", Request: 1}}
	// An answer missing, or fn failing, rolls back every effect of fn and
	// stores nothing.
	for name, fn := range map[string]func(tx pgx.Tx, todo []int) ([]idempotency.Answer, error){
		"short answer": func(tx pgx.Tx, todo []int) ([]idempotency.Answer, error) {
			if _, err := tx.Exec(ctx, `CREATE TABLE effect_short (id int)`); err != nil {
				return nil, err
			}
			return []idempotency.Answer{{Status: 201, Body: 1}}, nil
		},
		"fn error": func(tx pgx.Tx, todo []int) ([]idempotency.Answer, error) {
			if _, err := tx.Exec(ctx, `CREATE TABLE effect_error (id int)`); err != nil {
				return nil, err
			}
			return nil, problem.Invalid("name", "is required")
		},
	} {
		if _, err := idempotency.RunMany(ctx, d, calls, fn); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	var tables int
	if err := d.QueryRow(ctx, `SELECT count(*) FROM pg_tables WHERE tablename LIKE 'effect_%'`).Scan(&tables); err != nil {
		t.Fatal(err)
	}
	if tables != 0 {
		t.Errorf("%d effects of failed batches committed", tables)
	}
	if diff := cmp.Diff(map[string]string{}, storedKeys(t, d)); diff != "" {
		t.Errorf("stored after failures (-want +got):\n%s", diff)
	}
}

// TestRunManyAndRunConcurrently: a batch and single calls racing on the
// same keys run each key's effect exactly once and agree on its answer;
// batches with overlapping keys in different orders do not deadlock.
func TestRunManyAndRunConcurrently(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := testdb.New(t, "idemtest", idempotency.Migrate, idempotency.Migrations)
	const keys = 12
	var effects [keys]atomic.Int32
	keyOf := func(n int) string { return fmt.Sprintf("race-%d", n) }
	effect := func(n int) any {
		return map[string]any{"key": keyOf(n), "effect": effects[n].Add(1)}
	}
	batch := func(order []int) []idempotency.Outcome {
		calls := make([]idempotency.Call, len(order))
		for i, n := range order {
			calls[i] = idempotency.Call{Key: keyOf(n), Request: n}
		}
		out, err := idempotency.RunMany(ctx, d, calls, func(tx pgx.Tx, todo []int) ([]idempotency.Answer, error) {
			answers := make([]idempotency.Answer, len(todo))
			for j, i := range todo {
				answers[j] = idempotency.Answer{Status: 201, Body: effect(order[i])}
			}
			return answers, nil
		})
		if err != nil {
			t.Error(err)
		}
		return out
	}
	forward, backward := make([]int, keys), make([]int, keys)
	for n := range keys {
		forward[n], backward[keys-1-n] = n, n
	}

	var wg sync.WaitGroup
	var mu sync.Mutex
	bodies := map[string]map[string]bool{} // key → distinct bodies answered
	record := func(key string, body []byte) {
		mu.Lock()
		defer mu.Unlock()
		if bodies[key] == nil {
			bodies[key] = map[string]bool{}
		}
		bodies[key][string(body)] = true
	}
	for _, order := range [][]int{forward, backward, forward, backward} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i, o := range batch(order) {
				if o.Err != nil {
					t.Errorf("batch outcome %d: %v", i, o.Err)
				}
				record(keyOf(order[i]), o.Body)
			}
		}()
	}
	for n := range keys {
		for range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				res, err := idempotency.Run(ctx, d, keyOf(n), n, func(pgx.Tx) (int, any, error) {
					return 201, effect(n), nil
				})
				if err != nil {
					t.Error(err)
				}
				record(keyOf(n), res.Body)
			}()
		}
	}
	wg.Wait()

	for n := range keys {
		if got := effects[n].Load(); got != 1 {
			t.Errorf("%s: effect ran %d times", keyOf(n), got)
		}
		if got := len(bodies[keyOf(n)]); got != 1 {
			t.Errorf("%s: %d different answers: %v", keyOf(n), got, bodies[keyOf(n)])
		}
	}
	if got := len(storedKeys(t, d)); got != keys {
		t.Errorf("stored %d keys, want %d", got, keys)
	}
}
