package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/opencrm/crm/pkg/contract/identityapi"
	"github.com/opencrm/crm/pkg/db"
	"github.com/opencrm/crm/services/identity/internal/identity"
)

// lockUser reads a user's row under a share lock: the row lock order of
// every session write is the user's row, then token rows, as in
// UpdateUser (FOR UPDATE on the user, then revoking the tokens), so a
// session write and a password change or deactivation serialise on the
// user's row instead of deadlocking, and the change revokes every token
// the session write stored.
func lockUser(ctx context.Context, tx pgx.Tx, id int64) (identity.User, string, error) {
	var u identity.User
	var hash string
	err := tx.QueryRow(ctx, `SELECT `+userCols+`, password_hash FROM users WHERE id = $1 FOR SHARE`, id).
		Scan(&u.ID, &u.Name, &u.Email, &u.Role, &u.TeamID, &u.Active, &u.CreatedAt, &u.UpdatedAt, &u.EditScope, &hash)
	if db.IsNoRows(err) {
		return u, "", identity.ErrUserNotFound
	}
	return u, hash, err
}

// StartSession stores the first token of a family unless the account was
// deactivated or its password changed since verifiedHash was checked.
func (s *Store) StartSession(ctx context.Context, verifiedHash string, t identity.RefreshToken) (identity.User, error) {
	var u identity.User
	valid := false
	err := s.db.InTx(ctx, func(tx pgx.Tx) error {
		var hash string
		var err error
		u, hash, err = lockUser(ctx, tx, t.UserID)
		if errors.Is(err, identity.ErrUserNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		if !u.Active || hash != verifiedHash {
			return nil
		}
		if err := insertRefreshToken(ctx, tx, t); err != nil {
			return err
		}
		valid = true
		_, err = appendAudit(ctx, tx, as(own(ctx, identityapi.AuditLoginSucceeded, "user", u.ID,
			map[string]string{"family": t.FamilyID}), u))
		return err
	})
	if err != nil {
		return identity.User{}, fmt.Errorf("start session: %w", err)
	}
	if !valid {
		return identity.User{}, identity.ErrInvalidCredentials
	}
	return u, nil
}

func insertRefreshToken(ctx context.Context, q db.Querier, t identity.RefreshToken) error {
	_, err := q.Exec(ctx, `INSERT INTO refresh_tokens (token_hash, family_id, user_id, expires_at) VALUES ($1, $2, $3, $4)`,
		t.Hash, t.FamilyID, t.UserID, t.ExpiresAt)
	return err
}

// RotateRefreshToken spends the token with oldHash in one conditional
// UPDATE: of two concurrent rotations the second waits on the row lock,
// then finds it rotated and is treated as reuse. Reuse, or a deactivated
// owner, revokes the family; that revocation is committed even though the
// caller gets ErrInvalidRefresh.
//
// The owner's row is locked (FOR SHARE) before the token's: a token's
// user_id never changes, so it is read first without a lock. Locking the
// token first would deadlock with UpdateUser, which locks the user and
// then the tokens, while the new token's foreign key waits for the user.
func (s *Store) RotateRefreshToken(ctx context.Context, oldHash []byte, next func(int64, string) identity.RefreshToken) (identity.User, error) {
	var u identity.User
	valid := false
	err := s.db.InTx(ctx, func(tx pgx.Tx) error {
		var userID int64
		err := tx.QueryRow(ctx, `SELECT user_id FROM refresh_tokens WHERE token_hash = $1`, oldHash).Scan(&userID)
		if db.IsNoRows(err) {
			return nil // unknown
		}
		if err != nil {
			return err
		}
		if u, _, err = lockUser(ctx, tx, userID); err != nil {
			if errors.Is(err, identity.ErrUserNotFound) {
				return nil // deleted meanwhile, its tokens with it
			}
			return err
		}
		var family string
		err = tx.QueryRow(ctx, `UPDATE refresh_tokens SET rotated_at = now()
			WHERE token_hash = $1 AND rotated_at IS NULL AND revoked_at IS NULL AND expires_at > now()
			RETURNING family_id::text`, oldHash).Scan(&family)
		if db.IsNoRows(err) {
			var rotated bool
			err := tx.QueryRow(ctx, `SELECT family_id::text, rotated_at IS NOT NULL FROM refresh_tokens WHERE token_hash = $1`,
				oldHash).Scan(&family, &rotated)
			if db.IsNoRows(err) || (err == nil && !rotated) {
				return nil // purged, revoked or expired
			}
			if err != nil {
				return err
			}
			// Reuse of a spent token: whoever presented it may have
			// stolen it.
			return revokeFamily(ctx, tx, family, userID, "reuse", identityapi.AuditActor{Type: identityapi.AuditActorAnonymous})
		}
		if err != nil {
			return err
		}
		if !u.Active {
			return revokeFamily(ctx, tx, family, userID, "inactive", identityapi.AuditActor{Type: "system"})
		}
		if err := insertRefreshToken(ctx, tx, next(userID, family)); err != nil {
			return err
		}
		valid = true
		return nil
	})
	if err != nil {
		return identity.User{}, fmt.Errorf("rotate refresh token: %w", err)
	}
	if !valid {
		return identity.User{}, identity.ErrInvalidRefresh
	}
	return u, nil
}

// revokeFamily revokes the family of user's tokens and, when it had a
// token still unrevoked, records session.revoked by actor for reason
// (logout, reuse, inactive).
func revokeFamily(ctx context.Context, tx pgx.Tx, family string, user int64, reason string, actor identityapi.AuditActor) error {
	tag, err := tx.Exec(ctx, `UPDATE refresh_tokens SET revoked_at = now() WHERE family_id = $1::uuid AND revoked_at IS NULL`, family)
	if err != nil || tag.RowsAffected() == 0 {
		return err
	}
	m := own(ctx, identityapi.AuditSessionRevoked, "user", user, map[string]string{"family": family, "reason": reason})
	m.Actor = actor
	_, err = appendAudit(ctx, tx, m)
	return err
}

// RevokeFamily revokes every token of the family that hash belongs to (a
// logout, by the holder of the token: the user's).
func (s *Store) RevokeFamily(ctx context.Context, hash []byte) error {
	err := s.db.InTx(ctx, func(tx pgx.Tx) error {
		var family string
		var user identity.User
		err := tx.QueryRow(ctx, `SELECT t.family_id::text, u.id, u.name FROM refresh_tokens t JOIN users u ON u.id = t.user_id
			WHERE t.token_hash = $1`, hash).Scan(&family, &user.ID, &user.Name)
		if db.IsNoRows(err) {
			return nil
		}
		if err != nil {
			return err
		}
		return revokeFamily(ctx, tx, family, user.ID, "logout", as(identityapi.AuditMessage{}, user).Actor)
	})
	if err != nil {
		return fmt.Errorf("revoke refresh family: %w", err)
	}
	return nil
}

// PurgeRefreshTokens deletes tokens expired for longer than keep; until
// then a spent token still triggers reuse detection.
func (s *Store) PurgeRefreshTokens(ctx context.Context, keep time.Duration) (int64, error) {
	tag, err := s.db.Exec(ctx, `DELETE FROM refresh_tokens WHERE expires_at < $1`, time.Now().Add(-keep))
	if err != nil {
		return 0, fmt.Errorf("purge refresh tokens: %w", err)
	}
	return tag.RowsAffected(), nil
}
