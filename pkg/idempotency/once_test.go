package idempotency_test

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"io/fs"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"

	"github.com/opencrm/crm/pkg/db"
	"github.com/opencrm/crm/pkg/fault"
	"github.com/opencrm/crm/pkg/idempotency"
	"github.com/opencrm/crm/pkg/problem"
	"github.com/opencrm/crm/pkg/testdb"
)

// created is the typed result the tests store: a record's id and name.
type created struct {
	ID   int64  `json:"id"`
	Name string `json:"name"`
}

func TestOnceRunsOncePerKey(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := testdb.New(t, "idemtest", idempotency.Migrate, idempotency.Migrations)
	var runs atomic.Int64
	fn := func(tx pgx.Tx) (created, error) {
		return created{ID: runs.Add(1), Name: "A"}, nil
	}
	var wg sync.WaitGroup
	results := make([]idempotency.Done[created], 8)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := idempotency.Once(ctx, d, "lead-1", map[string]string{"a": "b"}, fn)
			if err != nil {
				t.Error(err)
			}
			results[i] = res
		}()
	}
	wg.Wait()
	if runs.Load() != 1 {
		t.Fatalf("ran %d times", runs.Load())
	}
	replays := 0
	for _, r := range results {
		if diff := cmp.Diff(created{ID: 1, Name: "A"}, r.Value); diff != "" {
			t.Errorf("value (-want +got):\n%s", diff)
		}
		if r.Replayed {
			replays++
		}
	}
	if replays != 7 {
		t.Errorf("replays = %d", replays)
	}

	_, err := idempotency.Once(ctx, d, "lead-1", map[string]string{"a": "other"}, fn)
	if !errors.Is(err, idempotency.ErrKeyReused) || fault.KindOf(err) != fault.KindConflict {
		t.Fatalf("different request: %v", err)
	}
	if p := problem.From(err); p.Status != http.StatusConflict || p.Code != "idempotency_key_reused" {
		t.Fatalf("different request answers %d %s", p.Status, p.Code)
	}

}

func TestOnceFailedRunIsNotStoredAndEmptyKeyIsNot(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := testdb.New(t, "idemtest", idempotency.Migrate, idempotency.Migrations)
	_, err := idempotency.Once(ctx, d, "k", 1, func(tx pgx.Tx) (created, error) {
		return created{}, fault.Invalid("name", "is required")
	})
	if fault.KindOf(err) != fault.KindInvalid {
		t.Fatal(err)
	}
	res, err := idempotency.Once(ctx, d, "k", 1, func(tx pgx.Tx) (created, error) { return created{ID: 2}, nil })
	if diff := cmp.Diff(idempotency.Done[created]{Value: created{ID: 2}}, res); diff != "" || err != nil {
		t.Fatalf("retry after failure (-want +got):\n%s%v", diff, err)
	}
	for range 2 {
		res, err := idempotency.Once(ctx, d, "", 1, func(tx pgx.Tx) (created, error) { return created{ID: 3}, nil })
		if diff := cmp.Diff(idempotency.Done[created]{Value: created{ID: 3}}, res); diff != "" || err != nil {
			t.Fatalf("no key (-want +got):\n%s%v", diff, err)
		}
	}
	var n int
	if err := d.QueryRow(ctx, `SELECT count(*) FROM idempotency_keys`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("stored keys = %d, %v", n, err)
	}
}

func TestOnceManyPerCallOutcomes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := testdb.New(t, "idemtest", idempotency.Migrate, idempotency.Migrations)
	ok := func(id int64, replayed bool) idempotency.Settled[created] {
		return idempotency.Settled[created]{Done: idempotency.Done[created]{Value: created{ID: id}, Replayed: replayed}}
	}
	reused := idempotency.Settled[created]{Err: idempotency.ErrKeyReused}
	tests := []struct {
		name string
		// stored is answered by Once before the batch: key → request; the
		// stored id is 100.
		stored   map[string]any
		calls    []idempotency.Call
		wantTodo [][]int
		want     []idempotency.Settled[created]
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
			want:     []idempotency.Settled[created]{reused, ok(1, false), ok(100, true)},
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
			want:     []idempotency.Settled[created]{ok(1, false), ok(2, false), ok(1, true), reused},
		},
		{
			name:   "everything stored: fn is not called",
			stored: map[string]any{"s1": 1},
			calls:  []idempotency.Call{{Key: "s1", Request: 1}, {Key: "s1", Request: 1}},
			want:   []idempotency.Settled[created]{ok(100, true), ok(100, true)},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			prefix := tc.name + "/"
			for k, req := range tc.stored {
				if _, err := idempotency.Once(ctx, d, prefix+k, req, func(pgx.Tx) (created, error) {
					return created{ID: 100}, nil
				}); err != nil {
					t.Fatal(err)
				}
			}
			calls := make([]idempotency.Call, len(tc.calls))
			for i, c := range tc.calls {
				calls[i] = idempotency.Call{Key: prefix + c.Key, Request: c.Request}
			}
			var todos [][]int
			got, err := idempotency.OnceMany(ctx, d, calls, func(tx pgx.Tx, todo []int) ([]created, error) {
				todos = append(todos, todo)
				out := make([]created, len(todo))
				for j := range todo {
					out[j] = created{ID: int64(j + 1)}
				}
				return out, nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got, cmp.Comparer(func(a, b error) bool { return errors.Is(a, b) })); diff != "" {
				t.Errorf("outcomes (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantTodo, todos); diff != "" {
				t.Errorf("todo (-want +got):\n%s", diff)
			}
		})
	}

	// An fn that answers short stores nothing.
	if _, err := idempotency.OnceMany(ctx, d, []idempotency.Call{{Key: "short-1", Request: 1}, {Key: "short-2", Request: 1}},
		func(tx pgx.Tx, todo []int) ([]created, error) { return []created{{ID: 1}}, nil }); err == nil {
		t.Error("short answer: no error")
	}
	var n int
	if err := d.QueryRow(ctx, `SELECT count(*) FROM idempotency_keys WHERE key LIKE 'short-%'`).Scan(&n); err != nil || n != 0 {
		t.Errorf("short answer stored %d keys, %v", n, err)
	}
}

// legacyLead is the body the leads store gave Run for a created lead
// before Once existed: the HTTP answer, with the record in "data".
const legacyLead = `{"data":{"id":41,"first_name":"Ada","last_name":"Lovelace","email":null},"message":"Lead created","success":true}`

// TestOnceReplaysRowsWrittenBeforeIt is the expand step: a row Run stored
// under the first schema (status and the HTTP body) is replayed by Once and
// OnceMany after the migration, as the record in the body's data member;
// another request with its key is still a conflict.
func TestOnceReplaysRowsWrittenBeforeIt(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	first, err := fs.ReadFile(idempotency.Migrations, "001_idempotency.sql")
	if err != nil {
		t.Fatal(err)
	}
	v1 := fstest.MapFS{"001_idempotency.sql": {Data: first}}
	d := testdb.New(t, "idemupgrade", func(ctx context.Context, d *db.DB) error {
		return db.Migrate(ctx, d, "idempotency", v1)
	}, v1)

	request := map[string]string{"first_name": "Ada", "last_name": "Lovelace"}
	reqJSON, err := json.Marshal(request)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(reqJSON)
	// The statement the first Run executed.
	for _, key := range []string{"old-single", "old-batch"} {
		if _, err := d.Exec(ctx, `INSERT INTO idempotency_keys (key, request_hash, status, response) VALUES ($1, $2, $3, $4)`,
			key, sum[:], 201, []byte(legacyLead)); err != nil {
			t.Fatal(err)
		}
	}
	if err := idempotency.Migrate(ctx, d); err != nil {
		t.Fatal(err)
	}

	type lead struct {
		ID        int64   `json:"id"`
		FirstName string  `json:"first_name"`
		Email     *string `json:"email"`
	}
	never := func(pgx.Tx) (lead, error) {
		t.Error("ran a key stored before the upgrade")
		return lead{}, nil
	}
	got, err := idempotency.Once(ctx, d, "old-single", request, never)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(idempotency.Done[lead]{Value: lead{ID: 41, FirstName: "Ada"}, Replayed: true}, got); diff != "" {
		t.Errorf("Once (-want +got):\n%s", diff)
	}
	// T may hold only the id.
	id, err := idempotency.Once(ctx, d, "old-single", request, func(pgx.Tx) (struct{ ID int64 }, error) {
		t.Error("ran a key stored before the upgrade")
		return struct{ ID int64 }{}, nil
	})
	if err != nil || id.Value.ID != 41 {
		t.Errorf("Once of the id: %+v, %v", id, err)
	}
	if _, err := idempotency.Once(ctx, d, "old-single", map[string]string{"first_name": "Other"}, never); !errors.Is(err, idempotency.ErrKeyReused) {
		t.Errorf("another request: %v", err)
	}

	many, err := idempotency.OnceMany(ctx, d, []idempotency.Call{{Key: "old-batch", Request: request}, {Key: "new", Request: request}},
		func(tx pgx.Tx, todo []int) ([]lead, error) {
			if diff := cmp.Diff([]int{1}, todo); diff != "" {
				t.Errorf("todo (-want +got):\n%s", diff)
			}
			return []lead{{ID: 42, FirstName: "Ada"}}, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	want := []idempotency.Settled[lead]{
		{Done: idempotency.Done[lead]{Value: lead{ID: 41, FirstName: "Ada"}, Replayed: true}},
		{Done: idempotency.Done[lead]{Value: lead{ID: 42, FirstName: "Ada"}}},
	}
	if diff := cmp.Diff(want, many); diff != "" {
		t.Errorf("OnceMany (-want +got):\n%s", diff)
	}

}

// OnceEncoded stores the bytes fn gives, answers a fresh run with fn's
// value and those bytes, and a replay as Once does: decoded, no Raw.
func TestOnceEncodedStoresTheGivenBytes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := testdb.New(t, "idemenc", idempotency.Migrate, idempotency.Migrations)
	runs := 0
	fn := func(tx pgx.Tx) (created, []byte, error) {
		runs++
		v := created{ID: 7, Name: "A"}
		raw, err := json.Marshal(v)
		return v, raw, err
	}
	first, err := idempotency.OnceEncoded(ctx, d, "enc-1", "req", fn)
	if err != nil {
		t.Fatal(err)
	}
	want := idempotency.Done[created]{Value: created{ID: 7, Name: "A"}, Raw: []byte(`{"id":7,"name":"A"}`)}
	if diff := cmp.Diff(want, first); diff != "" {
		t.Errorf("fresh (-want +got):\n%s", diff)
	}
	again, err := idempotency.OnceEncoded(ctx, d, "enc-1", "req", fn)
	if err != nil {
		t.Fatal(err)
	}
	want = idempotency.Done[created]{Value: created{ID: 7, Name: "A"}, Replayed: true}
	if diff := cmp.Diff(want, again); diff != "" {
		t.Errorf("replay (-want +got):\n%s", diff)
	}
	// A single write's Once replays what the batch stored, and the other way.
	once, err := idempotency.Once(ctx, d, "enc-1", "req", func(pgx.Tx) (created, error) { return created{}, nil })
	if err != nil || !once.Replayed || once.Value != (created{ID: 7, Name: "A"}) {
		t.Errorf("Once after OnceEncoded: %+v %v", once, err)
	}
	if _, err := idempotency.OnceEncoded(ctx, d, "enc-1", "other", fn); !errors.Is(err, idempotency.ErrKeyReused) {
		t.Errorf("different request: %v", err)
	}
	if runs != 1 {
		t.Errorf("ran %d times", runs)
	}
}
