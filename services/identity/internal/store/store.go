// Package store is identity's PostgreSQL storage. Every write that other
// contexts care about records its event with pkg/outbox in the same
// transaction, so the read models never miss a change nor see one that was
// rolled back.
package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/opencrm/crm/pkg/auth"
	"github.com/opencrm/crm/pkg/db"
	"github.com/opencrm/crm/pkg/directory"
	"github.com/opencrm/crm/pkg/listq"
	"github.com/opencrm/crm/pkg/outbox"
	"github.com/opencrm/crm/pkg/problem"
	"github.com/opencrm/crm/services/identity/internal/identity"
)

// Store implements identity.Store on PostgreSQL.
type Store struct {
	db *db.DB
}

var _ identity.Store = (*Store)(nil)

// New returns a store on d.
func New(d *db.DB) *Store { return &Store{db: d} }

// xactLock takes a transaction-scoped advisory lock of this context.
func xactLock(ctx context.Context, tx pgx.Tx, name string) error {
	if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", db.LockKey("crm-identity:"+name)); err != nil {
		return fmt.Errorf("advisory lock %s: %w", name, err)
	}
	return nil
}

const userCols = `id, name, email, role, team_id, active, created_at, updated_at, edit_scope`

var errTeamMissing = problem.Invalid("team_id", "team does not exist")

func userWriteErr(err error) error {
	switch {
	case db.IsUniqueViolation(err, "users_email_key"):
		return identity.ErrEmailTaken
	case db.IsForeignKeyViolation(err, ""):
		return errTeamMissing
	}
	return err
}

func collectUsers(rows pgx.Rows) ([]identity.User, error) {
	return pgx.CollectRows(rows, pgx.RowToStructByPos[identity.User])
}

func oneUser(rows pgx.Rows, err error) (identity.User, error) {
	if err != nil {
		return identity.User{}, err
	}
	u, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByPos[identity.User])
	if db.IsNoRows(err) {
		return identity.User{}, identity.ErrUserNotFound
	}
	return u, err
}

// CredentialsByEmail finds an account by email, case-insensitively.
func (s *Store) CredentialsByEmail(ctx context.Context, email string) (identity.Credentials, error) {
	var c identity.Credentials
	u := &c.User
	err := s.db.QueryRow(ctx, `SELECT `+userCols+`, password_hash FROM users WHERE lower(email) = lower($1) AND kind = 'person'`, email).
		Scan(&u.ID, &u.Name, &u.Email, &u.Role, &u.TeamID, &u.Active, &u.CreatedAt, &u.UpdatedAt, &u.EditScope, &c.PasswordHash)
	if db.IsNoRows(err) {
		return c, identity.ErrUserNotFound
	}
	if err != nil {
		return c, fmt.Errorf("credentials by email: %w", err)
	}
	return c, nil
}

// UserByID returns one account.
func (s *Store) UserByID(ctx context.Context, id int64) (identity.User, error) {
	rows, err := s.db.Query(ctx, `SELECT `+userCols+` FROM users WHERE id = $1`, id)
	return oneUser(rows, err)
}

// ListUsers returns one page of accounts and the total.
func (s *Store) ListUsers(ctx context.Context, f identity.UserFilter) ([]identity.User, int, error) {
	var w listq.Where
	w.And("kind = 'person'") // service users of access tokens are listed under /access-tokens
	q := f.Query
	if q.Search != "" {
		p := w.Arg("%" + listq.EscapeLike(q.Search) + "%")
		w.And("(name ILIKE " + p + " OR email ILIKE " + p + ")")
	}
	if f.Role != "" {
		w.And("role = " + w.Arg(f.Role))
	}
	if f.TeamID != nil {
		w.And("team_id = " + w.Arg(*f.TeamID))
	}
	if f.Active != nil {
		w.And("active = " + w.Arg(*f.Active))
	}
	if q.DateFrom != nil {
		w.And("created_at >= " + w.Arg(*q.DateFrom))
	}
	if q.DateTo != nil {
		w.And("created_at < " + w.Arg(*q.DateTo))
	}
	var total int
	if err := s.db.QueryRow(ctx, `SELECT count(*) FROM users `+w.SQL(), w.Args()...).Scan(&total); err != nil {
		return nil, 0, fmt.Errorf("count users: %w", err)
	}
	sql := `SELECT ` + userCols + ` FROM users ` + w.SQL() + " " + q.OrderBy() + " " + q.LimitOffset(&w)
	rows, err := s.db.Query(ctx, sql, w.Args()...)
	if err != nil {
		return nil, 0, fmt.Errorf("list users: %w", err)
	}
	users, err := collectUsers(rows)
	if err != nil {
		return nil, 0, fmt.Errorf("list users: %w", err)
	}
	return users, total, nil
}

// AllUsers returns every account, for the directory snapshot.
func (s *Store) AllUsers(ctx context.Context) ([]identity.User, error) {
	rows, err := s.db.Query(ctx, `SELECT `+userCols+` FROM users ORDER BY id`)
	if err != nil {
		return nil, fmt.Errorf("all users: %w", err)
	}
	users, err := collectUsers(rows)
	if err != nil {
		return nil, fmt.Errorf("all users: %w", err)
	}
	return users, nil
}

func insertUser(ctx context.Context, tx pgx.Tx, u identity.NewUser) (identity.User, error) {
	rows, err := tx.Query(ctx, `INSERT INTO users (name, email, password_hash, role, team_id, edit_scope)
		VALUES ($1, $2, $3, $4, $5, coalesce(nullif($6, ''), 'company')) RETURNING `+userCols,
		u.Name, u.Email, u.PasswordHash, u.Role, u.TeamID, u.EditScope)
	created, err := oneUser(rows, err)
	if err != nil {
		return created, userWriteErr(err)
	}
	if err := outbox.Add(ctx, tx, directory.Stream, directory.UserCreated, fmt.Sprint(created.ID), created.Directory()); err != nil {
		return created, err
	}
	return created, nil
}

// CreateUser inserts an account and its user.created event.
func (s *Store) CreateUser(ctx context.Context, u identity.NewUser) (identity.User, error) {
	var created identity.User
	err := s.db.InTx(ctx, func(tx pgx.Tx) error {
		var err error
		created, err = insertUser(ctx, tx, u)
		return err
	})
	return created, err
}

// BootstrapAdmin creates u when the table is empty. The advisory lock
// serialises replicas starting together, so exactly one creates it.
func (s *Store) BootstrapAdmin(ctx context.Context, u identity.NewUser) (identity.User, bool, error) {
	var created identity.User
	made := false
	err := s.db.InTx(ctx, func(tx pgx.Tx) error {
		if err := xactLock(ctx, tx, "bootstrap"); err != nil {
			return err
		}
		var exists bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM users)`).Scan(&exists); err != nil {
			return err
		}
		if exists {
			return nil
		}
		var err error
		created, err = insertUser(ctx, tx, u)
		made = err == nil
		return err
	})
	if err != nil {
		return identity.User{}, false, fmt.Errorf("bootstrap admin: %w", err)
	}
	return created, made, nil
}

// UpdateUser applies change under a row lock. Changes of role or activity
// additionally hold an advisory lock, so two concurrent demotions cannot
// both see "another admin remains" and leave none.
func (s *Store) UpdateUser(ctx context.Context, id int64, c identity.UserChange) (identity.User, error) {
	var updated identity.User
	err := s.db.InTx(ctx, func(tx pgx.Tx) error {
		if c.Role != nil || c.Active != nil {
			if err := xactLock(ctx, tx, "admins"); err != nil {
				return err
			}
		}
		rows, err := tx.Query(ctx, `SELECT `+userCols+` FROM users WHERE id = $1 AND kind = 'person' FOR UPDATE`, id)
		cur, err := oneUser(rows, err)
		if err != nil {
			return err
		}
		next := cur
		if c.Name != nil {
			next.Name = *c.Name
		}
		if c.Email != nil {
			next.Email = *c.Email
		}
		if c.Role != nil {
			next.Role = *c.Role
		}
		if c.TeamSet {
			next.TeamID = c.TeamID
		}
		if c.Active != nil {
			next.Active = *c.Active
		}
		if c.EditScope != nil {
			next.EditScope = *c.EditScope
		}
		wasAdmin := cur.Active && cur.Role == "admin"
		if wasAdmin && !(next.Active && next.Role == "admin") {
			var others int
			if err := tx.QueryRow(ctx, `SELECT count(*) FROM users WHERE role = 'admin' AND active AND kind = 'person' AND id <> $1`, id).
				Scan(&others); err != nil {
				return err
			}
			if others == 0 {
				return identity.ErrLastAdmin
			}
		}
		deactivated := cur.Active && !next.Active
		reduced := deactivated || (cur.Role == "admin" && next.Role != "admin")
		rows, err = tx.Query(ctx, `UPDATE users SET name = $2, email = $3, role = $4, team_id = $5, active = $6,
			password_hash = coalesce($7, password_hash), updated_at = now(),
			access_reduced_at = CASE WHEN $8 THEN now() ELSE access_reduced_at END,
			tokens_revoked_at = CASE WHEN $9 THEN now() ELSE tokens_revoked_at END, edit_scope = $10
			WHERE id = $1 RETURNING `+userCols,
			id, next.Name, next.Email, next.Role, next.TeamID, next.Active, c.PasswordHash, reduced, deactivated, next.EditScope)
		updated, err = oneUser(rows, err)
		if err != nil {
			return userWriteErr(err)
		}
		if c.PasswordHash != nil || deactivated {
			if _, err := tx.Exec(ctx, `UPDATE refresh_tokens SET revoked_at = now()
				WHERE user_id = $1 AND revoked_at IS NULL`, id); err != nil {
				return err
			}
		}
		return outbox.Add(ctx, tx, directory.Stream, directory.UserUpdated, fmt.Sprint(id), updated.Directory())
	})
	return updated, err
}

// AccessChanges returns the current state of every user whose access was
// reduced within the last window, for auth.PublishAccessChanges.
func (s *Store) AccessChanges(ctx context.Context, window time.Duration) ([]auth.AccessChange, error) {
	rows, err := s.db.Query(ctx, `SELECT id, active, role, tokens_revoked_at FROM users
		WHERE access_reduced_at > now() - make_interval(secs => $1) ORDER BY id`, window.Seconds())
	if err != nil {
		return nil, fmt.Errorf("access changes: %w", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[auth.AccessChange])
	if err != nil {
		return nil, fmt.Errorf("access changes: %w", err)
	}
	return out, nil
}

const teamCols = `id, name, created_at, updated_at`

func oneTeam(rows pgx.Rows, err error) (identity.Team, error) {
	if err != nil {
		return identity.Team{}, err
	}
	t, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByPos[identity.Team])
	switch {
	case db.IsNoRows(err):
		return t, identity.ErrTeamNotFound
	case db.IsUniqueViolation(err, "teams_name_key"):
		return t, identity.ErrTeamNameTaken
	}
	return t, err
}

// ListTeams returns every team by name.
func (s *Store) ListTeams(ctx context.Context) ([]identity.Team, error) {
	rows, err := s.db.Query(ctx, `SELECT `+teamCols+` FROM teams ORDER BY lower(name), id`)
	if err != nil {
		return nil, fmt.Errorf("list teams: %w", err)
	}
	teams, err := pgx.CollectRows(rows, pgx.RowToStructByPos[identity.Team])
	if err != nil {
		return nil, fmt.Errorf("list teams: %w", err)
	}
	return teams, nil
}

// TeamByID returns one team.
func (s *Store) TeamByID(ctx context.Context, id int64) (identity.Team, error) {
	rows, err := s.db.Query(ctx, `SELECT `+teamCols+` FROM teams WHERE id = $1`, id)
	return oneTeam(rows, err)
}

// CreateTeam inserts a team and its team.created event.
func (s *Store) CreateTeam(ctx context.Context, name string) (identity.Team, error) {
	var t identity.Team
	err := s.db.InTx(ctx, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `INSERT INTO teams (name) VALUES ($1) RETURNING `+teamCols, name)
		if t, err = oneTeam(rows, err); err != nil {
			return err
		}
		return outbox.Add(ctx, tx, directory.Stream, directory.TeamCreated, fmt.Sprint(t.ID), t.Event())
	})
	return t, err
}

// UpdateTeam renames a team and records team.updated.
func (s *Store) UpdateTeam(ctx context.Context, id int64, name string) (identity.Team, error) {
	var t identity.Team
	err := s.db.InTx(ctx, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `UPDATE teams SET name = $2, updated_at = now() WHERE id = $1 RETURNING `+teamCols, id, name)
		if t, err = oneTeam(rows, err); err != nil {
			return err
		}
		return outbox.Add(ctx, tx, directory.Stream, directory.TeamUpdated, fmt.Sprint(t.ID), t.Event())
	})
	return t, err
}

// DeleteTeam unassigns the team's members (each a user.updated event, so
// read models see the change even without handling team.deleted) and
// deletes the team.
func (s *Store) DeleteTeam(ctx context.Context, id int64) error {
	return s.db.InTx(ctx, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `UPDATE users SET team_id = NULL, updated_at = now() WHERE team_id = $1 RETURNING `+userCols, id)
		if err != nil {
			return err
		}
		members, err := collectUsers(rows)
		if err != nil {
			return err
		}
		rows, err = tx.Query(ctx, `DELETE FROM teams WHERE id = $1 RETURNING `+teamCols, id)
		t, err := oneTeam(rows, err)
		if err != nil {
			return err
		}
		for _, u := range members {
			if err := outbox.Add(ctx, tx, directory.Stream, directory.UserUpdated, fmt.Sprint(u.ID), u.Directory()); err != nil {
				return err
			}
		}
		t.UpdatedAt = time.Now().UTC()
		return outbox.Add(ctx, tx, directory.Stream, directory.TeamDeleted, fmt.Sprint(t.ID), t.Event())
	})
}

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
		return nil
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
			return revokeFamily(ctx, tx, family) // reuse of a spent token
		}
		if err != nil {
			return err
		}
		if !u.Active {
			return revokeFamily(ctx, tx, family)
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

func revokeFamily(ctx context.Context, q db.Querier, family string) error {
	_, err := q.Exec(ctx, `UPDATE refresh_tokens SET revoked_at = now() WHERE family_id = $1::uuid AND revoked_at IS NULL`, family)
	return err
}

// RevokeFamily revokes every token of the family that hash belongs to.
func (s *Store) RevokeFamily(ctx context.Context, hash []byte) error {
	_, err := s.db.Exec(ctx, `UPDATE refresh_tokens SET revoked_at = now()
		WHERE family_id = (SELECT family_id FROM refresh_tokens WHERE token_hash = $1) AND revoked_at IS NULL`, hash)
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

const apiKeyCols = `id, name, prefix, rate_limit_per_minute, allowed_origins, created_by, created_at, revoked_at`

func collectKeys(rows pgx.Rows) ([]identity.APIKey, error) {
	return pgx.CollectRows(rows, pgx.RowToStructByPos[identity.APIKey])
}

// CreateAPIKey stores a key's hash and settings.
func (s *Store) CreateAPIKey(ctx context.Context, k identity.NewAPIKey) (identity.APIKey, error) {
	rows, err := s.db.Query(ctx, `INSERT INTO api_keys (name, prefix, key_hash, rate_limit_per_minute, allowed_origins, created_by)
		VALUES ($1, $2, $3, $4, $5, $6) RETURNING `+apiKeyCols,
		k.Name, k.Prefix, k.Hash, k.RateLimitPerMinute, k.AllowedOrigins, k.CreatedBy)
	if err != nil {
		return identity.APIKey{}, fmt.Errorf("create api key: %w", err)
	}
	key, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByPos[identity.APIKey])
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

// RevokeAPIKey marks a key revoked; revoking twice keeps the first time.
func (s *Store) RevokeAPIKey(ctx context.Context, id int64) error {
	tag, err := s.db.Exec(ctx, `UPDATE api_keys SET revoked_at = coalesce(revoked_at, now()) WHERE id = $1`, id)
	if err != nil {
		return fmt.Errorf("revoke api key: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return identity.ErrAPIKeyNotFound
	}
	return nil
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

// PublishedKeys returns the active key and the keys retired within the
// policy's RetiredFor, newest first. Both sides of the comparison are the
// database's clock, which set retired_at.
func (s *Store) PublishedKeys(ctx context.Context, p identity.KeyPolicy) ([]identity.StoredKey, error) {
	rows, err := s.db.Query(ctx, `SELECT kid, public_key, private_key, encryption, created_at, retired_at FROM signing_keys
		WHERE retired_at IS NULL OR retired_at > now() - make_interval(secs => $1)
		ORDER BY created_at DESC, kid`, p.RetiredFor.Seconds())
	if err != nil {
		return nil, fmt.Errorf("published keys: %w", err)
	}
	keys, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (identity.StoredKey, error) {
		var k identity.StoredKey
		var pub []byte
		err := r.Scan(&k.Kid, &pub, &k.Private, &k.Encryption, &k.CreatedAt, &k.RetiredAt)
		k.Public = pub
		return k, err
	})
	if err != nil {
		return nil, fmt.Errorf("published keys: %w", err)
	}
	return keys, nil
}

func insertKey(ctx context.Context, tx pgx.Tx, k identity.StoredKey) error {
	_, err := tx.Exec(ctx, `INSERT INTO signing_keys (kid, public_key, private_key, encryption) VALUES ($1, $2, $3, $4)`,
		k.Kid, []byte(k.Public), k.Private, k.Encryption)
	return err
}

// EnsureActiveKey inserts k unless an active key exists.
func (s *Store) EnsureActiveKey(ctx context.Context, k identity.StoredKey) error {
	return s.db.InTx(ctx, func(tx pgx.Tx) error {
		if err := xactLock(ctx, tx, "signing-keys"); err != nil {
			return err
		}
		var exists bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM signing_keys WHERE retired_at IS NULL)`).Scan(&exists); err != nil {
			return err
		}
		if exists {
			return nil
		}
		return insertKey(ctx, tx, k)
	})
}

// RotateKey retires the active key and inserts k as the new active one.
func (s *Store) RotateKey(ctx context.Context, k identity.StoredKey) error {
	return s.db.InTx(ctx, func(tx pgx.Tx) error {
		if err := xactLock(ctx, tx, "signing-keys"); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE signing_keys SET retired_at = now() WHERE retired_at IS NULL`); err != nil {
			return err
		}
		return insertKey(ctx, tx, k)
	})
}
