package store

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/opencrm/crm/pkg/contract/identityapi"
	"github.com/opencrm/crm/pkg/db"
	"github.com/opencrm/crm/services/identity/internal/identity"
)

const apiKeyCols = `id, name, prefix, rate_limit_per_minute, allowed_origins, created_by, created_at, revoked_at`

// apiKeyRow reads apiKeyCols by column name, leaving Key, the secret that
// is never stored, empty. allowed_origins is NOT NULL, so an empty list
// reads as [], never nil, as the answers spell it.
func apiKeyRow(row pgx.CollectableRow) (identity.APIKey, error) {
	return pgx.RowToStructByNameLax[identity.APIKey](row)
}

func collectKeys(rows pgx.Rows) ([]identity.APIKey, error) {
	return pgx.CollectRows(rows, apiKeyRow)
}

// CreateAPIKey stores a key's hash and settings.
func (s *Store) CreateAPIKey(ctx context.Context, k identity.NewAPIKey) (identity.APIKey, error) {
	var key identity.APIKey
	err := s.db.InTx(ctx, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `INSERT INTO api_keys (name, prefix, key_hash, rate_limit_per_minute, allowed_origins, created_by)
			VALUES ($1, $2, $3, $4, $5, $6) RETURNING `+apiKeyCols,
			k.Name, k.Prefix, k.Hash, k.RateLimitPerMinute, k.AllowedOrigins, k.CreatedBy)
		if err != nil {
			return err
		}
		if key, err = pgx.CollectExactlyOneRow(rows, apiKeyRow); err != nil {
			return err
		}
		_, err = appendAudit(ctx, tx, own(ctx, identityapi.AuditAPIKeyCreated, "api_key", key.ID, map[string]any{
			"name": key.Name, "prefix": key.Prefix, "rate_limit_per_minute": key.RateLimitPerMinute,
			"allowed_origins": key.AllowedOrigins}))
		return err
	})
	if err != nil {
		return identity.APIKey{}, fmt.Errorf("create api key: %w", err)
	}
	return key, nil
}

// ListAPIKeys returns every key, newest first, revoked ones included.
func (s *Store) ListAPIKeys(ctx context.Context) ([]identity.APIKey, error) {
	rows, err := s.db.Query(ctx, `SELECT `+apiKeyCols+` FROM api_keys ORDER BY id DESC`)
	if err != nil {
		return nil, fmt.Errorf("list api keys: %w", err)
	}
	keys, err := collectKeys(rows)
	if err != nil {
		return nil, fmt.Errorf("list api keys: %w", err)
	}
	return keys, nil
}

// RevokeAPIKey marks a key revoked; revoking twice keeps the first time
// (and its audit entry: api_key.revoked is recorded once).
func (s *Store) RevokeAPIKey(ctx context.Context, id int64) error {
	err := s.db.InTx(ctx, func(tx pgx.Tx) error {
		var name, prefix string
		var fresh bool
		// revoked_at = now() only when this transaction set it.
		err := tx.QueryRow(ctx, `UPDATE api_keys SET revoked_at = coalesce(revoked_at, now()) WHERE id = $1
			RETURNING name, prefix, revoked_at = now()`, id).Scan(&name, &prefix, &fresh)
		if db.IsNoRows(err) {
			return identity.ErrAPIKeyNotFound
		}
		if err != nil || !fresh {
			return err
		}
		_, err = appendAudit(ctx, tx, own(ctx, identityapi.AuditAPIKeyRevoked, "api_key", id,
			map[string]string{"name": name, "prefix": prefix}))
		return err
	})
	if err != nil && err != identity.ErrAPIKeyNotFound {
		return fmt.Errorf("revoke api key: %w", err)
	}
	return err
}

// ActiveAPIKeyByHash finds an unrevoked key by its hash.
func (s *Store) ActiveAPIKeyByHash(ctx context.Context, hash []byte) (identity.APIKey, []byte, error) {
	var k identity.APIKey
	var stored []byte
	err := s.db.QueryRow(ctx, `SELECT `+apiKeyCols+`, key_hash FROM api_keys WHERE key_hash = $1 AND revoked_at IS NULL`, hash).
		Scan(&k.ID, &k.Name, &k.Prefix, &k.RateLimitPerMinute, &k.AllowedOrigins, &k.CreatedBy, &k.CreatedAt, &k.RevokedAt, &stored)
	if db.IsNoRows(err) {
		return k, nil, identity.ErrAPIKeyNotFound
	}
	if err != nil {
		return k, nil, fmt.Errorf("api key by hash: %w", err)
	}
	return k, stored, nil
}
