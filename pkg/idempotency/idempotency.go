// Package idempotency makes a write safe to retry: the first request with a
// key runs and its typed result (the record, or its id) is stored in the
// same transaction as its effects; a retry with the same key and body gets
// the stored result without running again; the same key with a different
// body is a conflict (409 at the edge). This is what lets a saga (lead
// qualification) or a retrying job (intake) call another context any
// number of times and create exactly one record. The store keeps no HTTP:
// the edge answers the result (Key and MarkReplayed are its helpers).
package idempotency

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/opencrm/crm/pkg/db"
	"github.com/opencrm/crm/pkg/fault"
	"github.com/opencrm/crm/pkg/idempotency/migrations"
)

// Header is the request header carrying the key.
const Header = "Idempotency-Key"

// MaxKeyLength bounds a key.
const MaxKeyLength = 255

// Migrations is the idempotency store's migration set.
var Migrations fs.FS = migrations.FS

// Migrate creates the idempotency_keys table in d's schema.
func Migrate(ctx context.Context, d *db.DB) error {
	return db.Migrate(ctx, d, "idempotency", Migrations)
}

// Key reads and checks the Idempotency-Key header; "" when absent.
func Key(r *http.Request) (string, error) {
	k := r.Header.Get(Header)
	if len(k) > MaxKeyLength {
		return "", fault.Invalidf(Header, "must be at most %d characters", MaxKeyLength)
	}
	for i := 0; i < len(k); i++ {
		if k[i] < 0x20 || k[i] > 0x7e {
			return "", fault.Invalid(Header, "must be printable ASCII (a UUID, for example)")
		}
	}
	return k, nil
}

// row is what a key holds: result, the JSON of the value Once's fn
// returned; or, in a row written before results were typed (migration
// 002), status and response, the HTTP answer stored then, which Once reads
// back (see value). Rows of that kind are gone 24 h after the upgrade.
type row struct {
	hash     []byte
	status   *int
	response []byte
	result   []byte
}

// runOnce is Once's core. Under the key's lock, a stored row with the same
// request hash is replayed and one with another hash is the reused error;
// without a row, fn runs inside the transaction that stores what it
// returns, so effects and row commit together. An empty key runs fn
// without protection.
func runOnce(ctx context.Context, d *db.DB, key string, request any, reused error, fn func(tx pgx.Tx) (row, error)) (row, bool, error) {
	reqJSON, err := json.Marshal(request)
	if err != nil {
		return row{}, false, err
	}
	sum := sha256.Sum256(reqJSON)
	var out row
	var replayed bool
	err = d.InTx(ctx, func(tx pgx.Tx) error {
		if key != "" {
			// Concurrent requests with one key queue at the lock instead
			// of racing; the read follows it in the same round trip (its
			// own statement, so its snapshot is taken after the lock, as
			// runMany's).
			b := &pgx.Batch{}
			b.Queue("SELECT pg_advisory_xact_lock($1)", lockKey(key))
			b.Queue(`SELECT request_hash, status, response, result FROM idempotency_keys WHERE key = $1`, key)
			br := tx.SendBatch(ctx, b)
			_, err := br.Exec()
			if err == nil {
				err = br.QueryRow().Scan(&out.hash, &out.status, &out.response, &out.result)
			}
			if cerr := br.Close(); cerr != nil && (err == nil || db.IsNoRows(err)) {
				err = cerr
			}
			if err == nil {
				if string(out.hash) != string(sum[:]) {
					return reused
				}
				replayed = true
				return nil
			}
			if !db.IsNoRows(err) {
				return err
			}
		}
		var err error
		if out, err = fn(tx); err != nil {
			return err
		}
		if key == "" {
			return nil
		}
		_, err = tx.Exec(ctx, `INSERT INTO idempotency_keys (key, request_hash, result) VALUES ($1, $2, $3)`,
			key, sum[:], out.result)
		return err
	})
	if err != nil {
		return row{}, false, err
	}
	return out, replayed, nil
}

// Call is one request of a batch: its key and the request whose JSON
// encoding fingerprints it, exactly as Once's key and request. Giving the
// same request value to Once and OnceMany makes a single retry and a batch
// retry of one key agree.
type Call struct {
	Key     string
	Request any
}

// settled is one call's row in a batch, or its reused error.
type settled struct {
	row      row
	replayed bool
	err      error
}

// runMany is OnceMany's core (OnceMany's comment tells its rules); fn
// returns one row per todo entry. reused makes the error of a key used
// with another request.
//
// Round trips inside the transaction: (1) the advisory locks of all keys and
// the read of their stored rows, pipelined as one pgx.Batch; (2) fn,
// called once with todo, the indexes into calls that must run (keys without
// a stored row, first occurrence only); fn is not called when todo is
// empty; (3) one multi-row INSERT of the new rows. An error from fn, or any
// other error, rolls everything back and is returned.
//
// Locks are taken in ascending lock-key order, so two batches sharing keys
// queue instead of deadlocking, and Once, which holds a single lock, cannot
// close a cycle with either. The read follows the locks in the same
// pipeline; under READ COMMITTED each statement takes a fresh snapshot, so
// it sees a row committed by whoever held a lock before us.
func runMany(ctx context.Context, d *db.DB, calls []Call, reused func() error, fn func(tx pgx.Tx, todo []int) ([]row, error)) ([]settled, error) {
	if len(calls) == 0 {
		return []settled{}, nil
	}
	sums := make([][sha256.Size]byte, len(calls))
	first := make(map[string]int, len(calls)) // key → index of its first occurrence
	keys := make([]string, 0, len(calls))     // distinct keys
	for i, c := range calls {
		if c.Key == "" {
			return nil, fmt.Errorf("idempotency: call %d has an empty key", i)
		}
		reqJSON, err := json.Marshal(c.Request)
		if err != nil {
			return nil, fmt.Errorf("idempotency: call %d: %w", i, err)
		}
		sums[i] = sha256.Sum256(reqJSON)
		if _, seen := first[c.Key]; !seen {
			first[c.Key] = i
			keys = append(keys, c.Key)
		}
	}
	locks := make([]int64, len(keys))
	for i, k := range keys {
		locks[i] = lockKey(k)
	}
	slices.Sort(locks)
	locks = slices.Compact(locks) // two keys may share a lock; take it once

	type held struct {
		row
		fresh bool // run by this batch rather than stored before
	}
	var out []settled
	err := d.InTx(ctx, func(tx pgx.Tx) error {
		// (1) Locks and stored rows, one round trip.
		b := &pgx.Batch{}
		// One statement for every lock; the sort sits below the projection
		// that calls the function, so the locks are taken in key order.
		b.Queue(`SELECT pg_advisory_xact_lock(k) FROM (SELECT k FROM unnest($1::bigint[]) AS k ORDER BY k) AS sorted`, locks)
		b.Queue(`SELECT key, request_hash, status, response, result FROM idempotency_keys WHERE key = ANY($1)`, keys)
		br := tx.SendBatch(ctx, b)
		if _, err := br.Exec(); err != nil {
			_ = br.Close()
			return fmt.Errorf("idempotency: lock: %w", err)
		}
		stored := make(map[string]held, len(keys))
		rows, err := br.Query()
		if err == nil {
			err = collectRows(rows, func(key string, r row) { stored[key] = held{row: r} })
		}
		if cerr := br.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("idempotency: read answers: %w", err)
		}

		// (2) Run what has no row yet.
		var todo []int
		for _, k := range keys {
			if _, ok := stored[k]; !ok {
				todo = append(todo, first[k])
			}
		}
		if len(todo) > 0 {
			got, err := fn(tx, todo)
			if err != nil {
				return err
			}
			if len(got) != len(todo) {
				return fmt.Errorf("idempotency: fn answered %d of %d calls", len(got), len(todo))
			}
			// (3) Store the new rows with one statement.
			newKeys := make([]string, len(todo))
			hashes := make([][]byte, len(todo))
			results := make([][]byte, len(todo))
			for j, i := range todo {
				r := got[j]
				r.hash = sums[i][:]
				k := calls[i].Key
				stored[k] = held{row: r, fresh: true}
				newKeys[j], hashes[j], results[j] = k, r.hash, r.result
			}
			if _, err := tx.Exec(ctx, `INSERT INTO idempotency_keys (key, request_hash, result)
				SELECT * FROM unnest($1::text[], $2::bytea[], $3::bytea[])`,
				newKeys, hashes, results); err != nil {
				return fmt.Errorf("idempotency: store answers: %w", err)
			}
		}

		out = make([]settled, len(calls))
		for i, c := range calls {
			h := stored[c.Key]
			if string(h.hash) != string(sums[i][:]) {
				out[i].err = reused()
				continue
			}
			r := h.row
			if first[c.Key] != i { // each outcome owns its bytes
				r.response, r.result = slices.Clone(r.response), slices.Clone(r.result)
			}
			out[i] = settled{row: r, replayed: !h.fresh || first[c.Key] != i}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// collectRows reads rows of (key, request_hash, status, response, result),
// each into fresh buffers.
func collectRows(rows pgx.Rows, fn func(key string, r row)) error {
	defer rows.Close()
	for rows.Next() {
		var key string
		var r row
		if err := rows.Scan(&key, &r.hash, &r.status, &r.response, &r.result); err != nil {
			return err
		}
		fn(key, r)
	}
	return rows.Err()
}

// Purge deletes keys older than age; run it periodically.
func Purge(ctx context.Context, q db.Querier, age time.Duration) error {
	_, err := q.Exec(ctx, `DELETE FROM idempotency_keys WHERE created_at < $1`, time.Now().Add(-age))
	return err
}

func lockKey(s string) int64 { return db.LockKey("crm-idem:" + s) }

// ReplayedHeader marks an answer given from a stored result instead of a
// run, so a caller can tell its retry found the first attempt's record.
const ReplayedHeader = "Idempotent-Replayed"

// MarkReplayed sets ReplayedHeader on a replayed answer; the edge calls it
// before writing the answer it builds from Done.
func MarkReplayed(w http.ResponseWriter, replayed bool) {
	if replayed {
		w.Header().Set(ReplayedHeader, "true")
	}
}

// PurgeEvery deletes keys older than age every interval until ctx ends.
func PurgeEvery(ctx context.Context, q db.Querier, interval, age time.Duration, log *slog.Logger) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if err := Purge(ctx, q, age); err != nil && ctx.Err() == nil {
			log.Warn("idempotency purge failed", "error", err.Error())
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
