package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/opencrm/crm/pkg/auth"
	"github.com/opencrm/crm/pkg/contract/identityapi"
	"github.com/opencrm/crm/pkg/db"
	"github.com/opencrm/crm/pkg/directory"
	"github.com/opencrm/crm/pkg/fault"
	"github.com/opencrm/crm/pkg/list/listsql"
	"github.com/opencrm/crm/pkg/outbox"
	"github.com/opencrm/crm/services/identity/internal/identity"
)

const userCols = `id, name, email, role, team_id, active, created_at, updated_at, edit_scope`

// userSorts maps identity.UserSorts to SQL (trusted code, never input);
// the id breaks ties so pages are stable.
var userSorts = listsql.Sorts{
	By: map[string]string{
		"name": "lower(name)", "email": "lower(email)", "role": "role",
		"created_at": "created_at", "updated_at": "updated_at",
	},
	TieBreak: "id",
}

var errTeamMissing = fault.Invalid("team_id", "team does not exist")

func userWriteErr(err error) error {
	switch {
	case db.IsUniqueViolation(err, "users_email_key"):
		return identity.ErrEmailTaken
	case db.IsForeignKeyViolation(err, ""):
		return errTeamMissing
	}
	return err
}

// collectUsers reads userCols rows by column name: the user is the
// contract's type, whose field order is the API's, not the table's.
func collectUsers(rows pgx.Rows) ([]identity.User, error) {
	return pgx.CollectRows(rows, pgx.RowToStructByName[identity.User])
}

func oneUser(rows pgx.Rows, err error) (identity.User, error) {
	if err != nil {
		return identity.User{}, err
	}
	u, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[identity.User])
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
	var w listsql.Where
	w.And("kind = 'person'") // service users of access tokens are listed with their tokens
	q := f.Query
	if q.Search != "" {
		p := w.Arg("%" + listsql.EscapeLike(q.Search) + "%")
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
	sql := `SELECT ` + userCols + ` FROM users ` + w.SQL() + " " + userSorts.OrderBy(q) + " " + listsql.LimitOffset(&w, q)
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
	if err := outbox.Add(ctx, tx, directory.Stream, directory.UserCreated, fmt.Sprint(created.ID), identity.DirectoryEntry(created)); err != nil {
		return created, err
	}
	_, err = appendAudit(ctx, tx, own(ctx, identityapi.AuditUserCreated, "user", created.ID, map[string]any{
		"name": created.Name, "email": created.Email, "role": created.Role, "team_id": created.TeamID, "edit_scope": created.EditScope}))
	return created, err
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
		var revoked int64
		if c.PasswordHash != nil || deactivated {
			tag, err := tx.Exec(ctx, `UPDATE refresh_tokens SET revoked_at = now()
				WHERE user_id = $1 AND revoked_at IS NULL`, id)
			if err != nil {
				return err
			}
			revoked = tag.RowsAffected()
		}
		if err := outbox.Add(ctx, tx, directory.Stream, directory.UserUpdated, fmt.Sprint(id), identity.DirectoryEntry(updated)); err != nil {
			return err
		}
		_, err = appendAudit(ctx, tx, userChanges(ctx, cur, updated, c.PasswordHash != nil, revoked)...)
		return err
	})
	return updated, err
}

// userChanges are the audit entries of a user's update from cur to next:
// role.changed, edit_scope.changed, user.deactivated (with the sessions
// it revoked) and user.updated for the other fields, each with the
// fields it changed; none when nothing changed.
func userChanges(ctx context.Context, cur, next identity.User, password bool, revoked int64) []identityapi.AuditMessage {
	var out []identityapi.AuditMessage
	entry := func(action string, changes []change, more map[string]any) {
		d := map[string]any{"changes": changes}
		for k, v := range more {
			d[k] = v
		}
		out = append(out, own(ctx, action, "user", cur.ID, d))
	}
	if cur.Role != next.Role {
		entry(identityapi.AuditRoleChanged, []change{{"role", cur.Role, next.Role}}, nil)
	}
	if cur.EditScope != next.EditScope {
		entry(identityapi.AuditEditScopeChanged, []change{{"edit_scope", cur.EditScope, next.EditScope}}, nil)
	}
	deactivated := cur.Active && !next.Active
	if deactivated {
		entry(identityapi.AuditUserDeactivated, []change{{"active", true, false}}, map[string]any{"sessions_revoked": revoked})
	}
	var other []change
	if cur.Name != next.Name {
		other = append(other, change{"name", cur.Name, next.Name})
	}
	if cur.Email != next.Email {
		other = append(other, change{"email", cur.Email, next.Email})
	}
	if !equalTeam(cur.TeamID, next.TeamID) {
		other = append(other, change{"team_id", cur.TeamID, next.TeamID})
	}
	if !cur.Active && next.Active {
		other = append(other, change{"active", false, true})
	}
	if password {
		other = append(other, change{Field: "password"})
	}
	if len(other) > 0 {
		more := map[string]any{}
		if password && !deactivated {
			more["sessions_revoked"] = revoked
		}
		entry(identityapi.AuditUserUpdated, other, more)
	}
	return out
}

func equalTeam(a, b *int64) bool {
	return (a == nil) == (b == nil) && (a == nil || *a == *b)
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
