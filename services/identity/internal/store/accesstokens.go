package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/opencrm/crm/pkg/contract/identityapi"
	"github.com/opencrm/crm/pkg/db"
	"github.com/opencrm/crm/pkg/directory"
	"github.com/opencrm/crm/pkg/outbox"
	"github.com/opencrm/crm/services/identity/internal/identity"
)

const accessTokenCols = `id, name, prefix, scopes, role, user_id, created_by, created_at, expires_at, last_used_at, revoked_at`

// accessTokenRow reads accessTokenCols by column name, leaving Token, the
// secret that is never stored, empty. scopes is NOT NULL, so the list is
// never nil.
func accessTokenRow(row pgx.CollectableRow) (identity.AccessToken, error) {
	return pgx.RowToStructByNameLax[identity.AccessToken](row)
}

// CreateAccessToken inserts the token's service user and the token in one
// transaction. The service user's password hash is "!", which no password
// verifies, and login looks up persons only.
func (s *Store) CreateAccessToken(ctx context.Context, t identity.NewAccessToken) (identity.AccessToken, error) {
	var out identity.AccessToken
	err := s.db.InTx(ctx, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `INSERT INTO users (name, email, password_hash, role, kind)
			VALUES ($1, $2, '!', $3, 'service') RETURNING `+userCols, t.Name, t.ServiceEmail, t.Role)
		u, err := oneUser(rows, err)
		if err != nil {
			return fmt.Errorf("create service user: %w", err)
		}
		if err := outbox.Add(ctx, tx, directory.Stream, directory.UserCreated, fmt.Sprint(u.ID), identity.DirectoryEntry(u)); err != nil {
			return err
		}
		rows, err = tx.Query(ctx, `INSERT INTO access_tokens (name, prefix, token_hash, scopes, role, user_id, created_by, expires_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING `+accessTokenCols,
			t.Name, t.Prefix, t.Hash, t.Scopes, t.Role, u.ID, t.CreatedBy, t.ExpiresAt)
		if err != nil {
			return fmt.Errorf("create access token: %w", err)
		}
		out, err = pgx.CollectExactlyOneRow(rows, accessTokenRow)
		if err != nil {
			return fmt.Errorf("create access token: %w", err)
		}
		_, err = appendAudit(ctx, tx, own(ctx, identityapi.AuditTokenCreated, "token", out.ID, map[string]any{
			"name": out.Name, "prefix": out.Prefix, "scopes": out.Scopes, "role": out.Role, "user_id": out.UserID,
			"expires_at": out.ExpiresAt}))
		return err
	})
	return out, err
}

// ListAccessTokens returns every token, newest first, revoked ones included.
func (s *Store) ListAccessTokens(ctx context.Context) ([]identity.AccessToken, error) {
	rows, err := s.db.Query(ctx, `SELECT `+accessTokenCols+` FROM access_tokens ORDER BY id DESC`)
	if err != nil {
		return nil, fmt.Errorf("list access tokens: %w", err)
	}
	out, err := pgx.CollectRows(rows, accessTokenRow)
	if err != nil {
		return nil, fmt.Errorf("list access tokens: %w", err)
	}
	return out, nil
}

// RevokeAccessToken marks the token revoked (the first time is kept) and
// deactivates its service user with a user.updated event.
func (s *Store) RevokeAccessToken(ctx context.Context, id int64) error {
	return s.db.InTx(ctx, func(tx pgx.Tx) error {
		var userID int64
		var name, prefix string
		var fresh bool
		// revoked_at = now() only when this transaction set it.
		err := tx.QueryRow(ctx, `UPDATE access_tokens SET revoked_at = coalesce(revoked_at, now())
			WHERE id = $1 RETURNING user_id, name, prefix, revoked_at = now()`, id).Scan(&userID, &name, &prefix, &fresh)
		if db.IsNoRows(err) {
			return identity.ErrAccessTokenNotFound
		}
		if err != nil {
			return fmt.Errorf("revoke access token: %w", err)
		}
		rows, err := tx.Query(ctx, `UPDATE users SET active = false, updated_at = now()
			WHERE id = $1 AND active RETURNING `+userCols, userID)
		if err != nil {
			return fmt.Errorf("deactivate service user: %w", err)
		}
		users, err := collectUsers(rows)
		if err != nil {
			return fmt.Errorf("deactivate service user: %w", err)
		}
		for _, u := range users {
			if err := outbox.Add(ctx, tx, directory.Stream, directory.UserUpdated, fmt.Sprint(u.ID), identity.DirectoryEntry(u)); err != nil {
				return err
			}
		}
		if !fresh {
			return nil
		}
		_, err = appendAudit(ctx, tx, own(ctx, identityapi.AuditTokenRevoked, "token", id,
			map[string]any{"name": name, "prefix": prefix, "user_id": userID}))
		return err
	})
}

// AccessTokenByHash finds an unrevoked token by its hash.
func (s *Store) AccessTokenByHash(ctx context.Context, hash []byte) (identity.AccessToken, []byte, error) {
	var t identity.AccessToken
	var stored []byte
	err := s.db.QueryRow(ctx, `SELECT `+accessTokenCols+`, token_hash FROM access_tokens
		WHERE token_hash = $1 AND revoked_at IS NULL`, hash).
		Scan(&t.ID, &t.Name, &t.Prefix, &t.Scopes, &t.Role, &t.UserID, &t.CreatedBy, &t.CreatedAt,
			&t.ExpiresAt, &t.LastUsedAt, &t.RevokedAt, &stored)
	if db.IsNoRows(err) {
		return t, nil, identity.ErrAccessTokenNotFound
	}
	if err != nil {
		return t, nil, fmt.Errorf("access token by hash: %w", err)
	}
	return t, stored, nil
}

// TouchAccessToken records a use at most once per every: the condition
// makes the other calls within the interval write nothing.
func (s *Store) TouchAccessToken(ctx context.Context, id int64, every time.Duration) error {
	_, err := s.db.Exec(ctx, `UPDATE access_tokens SET last_used_at = now()
		WHERE id = $1 AND (last_used_at IS NULL OR last_used_at < now() - make_interval(secs => $2))`,
		id, every.Seconds())
	if err != nil {
		return fmt.Errorf("touch access token: %w", err)
	}
	return nil
}
