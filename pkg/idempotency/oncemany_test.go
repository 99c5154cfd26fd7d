package idempotency_test

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"

	"github.com/opencrm/crm/pkg/db"
	"github.com/opencrm/crm/pkg/fault"
	"github.com/opencrm/crm/pkg/idempotency"
	"github.com/opencrm/crm/pkg/problem"
	"github.com/opencrm/crm/pkg/testdb"
)

// answer is the typed result these tests store: the key a call ran for
// and which run of fn it was.
type answer struct {
	Key string `json:"key"`
	Run int    `json:"run"`
}

// recorder is a OnceMany fn that answers {key, run: n} for every call it
// runs and remembers which calls ran.
type recorder struct {
	mu    sync.Mutex
	runs  int
	todos [][]int
}

func (r *recorder) fn(calls []idempotency.Call) func(tx pgx.Tx, todo []int) ([]answer, error) {
	return func(tx pgx.Tx, todo []int) ([]answer, error) {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.todos = append(r.todos, append([]int(nil), todo...))
		out := make([]answer, len(todo))
		for j, i := range todo {
			r.runs++
			out[j] = answer{Key: calls[i].Key, Run: r.runs}
		}
		return out, nil
	}
}

func settled(key string, run int, replayed bool) idempotency.Settled[answer] {
	return idempotency.Settled[answer]{Done: idempotency.Done[answer]{Value: answer{Key: key, Run: run}, Replayed: replayed}}
}

// storedKeys is every key's stored result as text.
func storedKeys(t *testing.T, d *db.DB) map[string]string {
	t.Helper()
	rows, err := d.Query(context.Background(), `SELECT key, convert_from(result, 'UTF8') FROM idempotency_keys`)
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

func TestOnceManyRunsOnceAndReplays(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := testdb.New(t, "idemtest", idempotency.Migrate, idempotency.Migrations)
	calls := []idempotency.Call{
		{Key: "a", Request: map[string]string{"name": "A"}},
		{Key: "b", Request: map[string]string{"name": "B"}},
		{Key: "c", Request: 3},
	}
	var rec recorder
	got, err := idempotency.OnceMany(ctx, d, calls, rec.fn(calls))
	if err != nil {
		t.Fatal(err)
	}
	want := []idempotency.Settled[answer]{settled("a", 1, false), settled("b", 2, false), settled("c", 3, false)}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("first OnceMany (-want +got):\n%s", diff)
	}
	wantStored := map[string]string{"a": `{"key":"a","run":1}`, "b": `{"key":"b","run":2}`, "c": `{"key":"c","run":3}`}
	if diff := cmp.Diff(wantStored, storedKeys(t, d)); diff != "" {
		t.Fatalf("stored results (-want +got):\n%s", diff)
	}

	// The retry replays every result and runs nothing.
	got, err = idempotency.OnceMany(ctx, d, calls, rec.fn(calls))
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

	// Once sees the batch's results, and OnceMany sees Once's.
	res, err := idempotency.Once(ctx, d, "b", map[string]string{"name": "B"}, func(pgx.Tx) (answer, error) {
		t.Fatal("Once ran a key stored by OnceMany")
		return answer{}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(idempotency.Done[answer]{Value: answer{Key: "b", Run: 2}, Replayed: true}, res); diff != "" {
		t.Fatalf("Once after OnceMany (-want +got):\n%s", diff)
	}
	if _, err := idempotency.Once(ctx, d, "single", "x", func(pgx.Tx) (answer, error) { return answer{Key: "from Once"}, nil }); err != nil {
		t.Fatal(err)
	}
	single := []idempotency.Call{{Key: "single", Request: "x"}}
	got, err = idempotency.OnceMany(ctx, d, single, rec.fn(single))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]idempotency.Settled[answer]{settled("from Once", 0, true)}, got); diff != "" {
		t.Fatalf("OnceMany after Once (-want +got):\n%s", diff)
	}
}

func TestOnceManyErrors(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := testdb.New(t, "idemtest", idempotency.Migrate, idempotency.Migrations)
	never := func(pgx.Tx, []int) ([]answer, error) {
		t.Error("fn ran")
		return nil, nil
	}
	if _, err := idempotency.OnceMany(ctx, d, []idempotency.Call{{Key: "k", Request: 1}, {Key: "", Request: 2}}, never); err == nil {
		t.Error("empty key: no error")
	}
	if _, err := idempotency.OnceMany(ctx, d, []idempotency.Call{{Key: "k", Request: func() {}}}, never); err == nil {
		t.Error("unencodable request: no error")
	}
	got, err := idempotency.OnceMany(ctx, d, nil, never)
	if err != nil || len(got) != 0 {
		t.Errorf("no calls: %v, %v", got, err)
	}

	calls := []idempotency.Call{{Key: "x", Request: 1}, {Key: "y", Request: 1}}
	// A result missing, or fn failing, rolls back every effect of fn and
	// stores nothing.
	for name, fn := range map[string]func(tx pgx.Tx, todo []int) ([]answer, error){
		"short answer": func(tx pgx.Tx, todo []int) ([]answer, error) {
			if _, err := tx.Exec(ctx, `CREATE TABLE effect_short (id int)`); err != nil {
				return nil, err
			}
			return []answer{{Run: 1}}, nil
		},
		"fn error": func(tx pgx.Tx, todo []int) ([]answer, error) {
			if _, err := tx.Exec(ctx, `CREATE TABLE effect_error (id int)`); err != nil {
				return nil, err
			}
			return nil, fault.Invalid("name", "is required")
		},
	} {
		if _, err := idempotency.OnceMany(ctx, d, calls, fn); err == nil {
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
	// A reused key is a 409 at the edge.
	if p := problem.From(idempotency.ErrKeyReused); p.Status != http.StatusConflict || p.Code != "idempotency_key_reused" {
		t.Errorf("reused key answers %d %s", p.Status, p.Code)
	}
}

// TestOnceManyAndOnceConcurrently: a batch and single calls racing on the
// same keys run each key's effect exactly once and agree on its result;
// batches with overlapping keys in different orders do not deadlock.
func TestOnceManyAndOnceConcurrently(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := testdb.New(t, "idemtest", idempotency.Migrate, idempotency.Migrations)
	const keys = 12
	var effects [keys]atomic.Int32
	keyOf := func(n int) string { return fmt.Sprintf("race-%d", n) }
	effect := func(n int) answer { return answer{Key: keyOf(n), Run: int(effects[n].Add(1))} }
	batch := func(order []int) []idempotency.Settled[answer] {
		calls := make([]idempotency.Call, len(order))
		for i, n := range order {
			calls[i] = idempotency.Call{Key: keyOf(n), Request: n}
		}
		out, err := idempotency.OnceMany(ctx, d, calls, func(tx pgx.Tx, todo []int) ([]answer, error) {
			answers := make([]answer, len(todo))
			for j, i := range todo {
				answers[j] = effect(order[i])
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
	results := map[string]map[answer]bool{} // key → distinct results
	record := func(key string, v answer) {
		mu.Lock()
		defer mu.Unlock()
		if results[key] == nil {
			results[key] = map[answer]bool{}
		}
		results[key][v] = true
	}
	for _, order := range [][]int{forward, backward, forward, backward} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i, o := range batch(order) {
				if o.Err != nil {
					t.Errorf("batch outcome %d: %v", i, o.Err)
				}
				record(keyOf(order[i]), o.Value)
			}
		}()
	}
	for n := range keys {
		for range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				res, err := idempotency.Once(ctx, d, keyOf(n), n, func(pgx.Tx) (answer, error) { return effect(n), nil })
				if err != nil {
					t.Error(err)
				}
				record(keyOf(n), res.Value)
			}()
		}
	}
	wg.Wait()

	for n := range keys {
		if got := effects[n].Load(); got != 1 {
			t.Errorf("%s: effect ran %d times", keyOf(n), got)
		}
		if got := len(results[keyOf(n)]); got != 1 {
			t.Errorf("%s: %d different results: %v", keyOf(n), got, results[keyOf(n)])
		}
	}
	if got := len(storedKeys(t, d)); got != keys {
		t.Errorf("stored %d keys, want %d", got, keys)
	}
}
