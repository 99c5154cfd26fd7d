// Package idempotency makes a write safe to retry: the first request with a
// key runs and its answer is stored in the same transaction as its effects;
// a retry with the same key and body gets the stored answer without running
// again; the same key with a different body is a 409. This is what lets a
// saga (lead qualification) or a retrying job (intake) call another context
// any number of times and create exactly one record.
package idempotency

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io/fs"
	"log/slog"
	"net/http"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/opencrm/crm/pkg/db"
	"github.com/opencrm/crm/pkg/idempotency/migrations"
	"github.com/opencrm/crm/pkg/problem"
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

// Result is a stored or fresh answer.
type Result struct {
	Status   int
	Body     json.RawMessage
	Replayed bool
}

// Key reads and checks the Idempotency-Key header; "" when absent.
func Key(r *http.Request) (string, error) {
	k := r.Header.Get(Header)
	if len(k) > MaxKeyLength {
		return "", problem.Invalid(Header, fmt.Sprintf("must be at most %d characters", MaxKeyLength))
	}
	return k, nil
}

// Run executes fn at most once per key. fn runs inside the transaction that
// also stores its answer, so effects and answer commit together. An empty
// key runs fn without protection.
func Run(ctx context.Context, d *db.DB, key string, request any, fn func(tx pgx.Tx) (int, any, error)) (Result, error) {
	reqJSON, err := json.Marshal(request)
	if err != nil {
		return Result{}, err
	}
	sum := sha256.Sum256(reqJSON)
	var res Result
	err = d.InTx(ctx, func(tx pgx.Tx) error {
		if key != "" {
			// Concurrent requests with one key queue here instead of racing.
			if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", lockKey(key)); err != nil {
				return err
			}
			var hash []byte
			err := tx.QueryRow(ctx, `SELECT request_hash, status, response FROM idempotency_keys WHERE key = $1`, key).
				Scan(&hash, &res.Status, &res.Body)
			if err == nil {
				if string(hash) != string(sum[:]) {
					return problem.Conflict("idempotency_key_reused", "this Idempotency-Key was used with a different request")
				}
				res.Replayed = true
				return nil
			}
			if !db.IsNoRows(err) {
				return err
			}
		}
		status, body, err := fn(tx)
		if err != nil {
			return err
		}
		raw, err := json.Marshal(body)
		if err != nil {
			return err
		}
		res = Result{Status: status, Body: raw}
		if key == "" {
			return nil
		}
		_, err = tx.Exec(ctx, `INSERT INTO idempotency_keys (key, request_hash, status, response) VALUES ($1, $2, $3, $4)`,
			key, sum[:], status, raw)
		return err
	})
	return res, err
}

// Purge deletes keys older than age; run it periodically.
func Purge(ctx context.Context, q db.Querier, age time.Duration) error {
	_, err := q.Exec(ctx, `DELETE FROM idempotency_keys WHERE created_at < $1`, time.Now().Add(-age))
	return err
}

func lockKey(s string) int64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte("crm-idem:" + s))
	return int64(h.Sum64() & 0x7fffffffffffffff)
}

// Write sends a Result as the HTTP answer.
func Write(w http.ResponseWriter, res Result) {
	w.Header().Set("Content-Type", "application/json")
	if res.Replayed {
		w.Header().Set("Idempotent-Replayed", "true")
	}
	w.WriteHeader(res.Status)
	_, _ = w.Write(res.Body)
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
