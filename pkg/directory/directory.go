// Package directory keeps a context's local read model of identity's users
// (name, role, team, active) up to date from identity's events, with a
// snapshot sync at start-up so a context that starts late, or after Redis
// lost its streams, still knows every user. A lookup that misses an id asks
// identity itself (Users.Exists) before saying no, so a user created a
// moment ago can be assigned before its event arrives. It also defines the
// identity event contract that feeds it.
package directory

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"time"

	"github.com/opencrm/crm/pkg/contract/identityapi"
	"github.com/opencrm/crm/pkg/db"
	"github.com/opencrm/crm/pkg/directory/migrations"
	"github.com/opencrm/crm/pkg/outbox"
)

// Stream is identity's event stream.
var Stream = outbox.Stream("identity")

// Event types identity publishes for users. Teams are published as
// team.created / team.updated / team.deleted with TeamEvent data.
const (
	UserCreated = "user.created"
	UserUpdated = "user.updated"
	TeamCreated = "team.created"
	TeamUpdated = "team.updated"
	TeamDeleted = "team.deleted"
)

// User is the data of every user.* event and of the snapshot; identity's
// contract owns its shape.
type User = identityapi.DirectoryUser

// TeamEvent is the data of team.* events.
type TeamEvent struct {
	ID        int64     `json:"id"`
	Name      string    `json:"name"`
	UpdatedAt time.Time `json:"updated_at"`
}

// Migrations is the read model's migration set.
var Migrations fs.FS = migrations.FS

// Migrate creates the directory_users table in d's schema.
func Migrate(ctx context.Context, d *db.DB) error {
	return db.Migrate(ctx, d, "directory", Migrations)
}

// Upsert applies a user's state unless a newer one is already stored, so
// redelivered or reordered events never roll the model back.
func Upsert(ctx context.Context, q db.Querier, u User) error {
	scope := u.EditScope
	if scope == "" {
		scope = ScopeCompany
	}
	_, err := q.Exec(ctx, `INSERT INTO directory_users (id, name, email, role, team_id, active, updated_at, edit_scope)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
		ON CONFLICT (id) DO UPDATE SET name = EXCLUDED.name, email = EXCLUDED.email, role = EXCLUDED.role,
			team_id = EXCLUDED.team_id, active = EXCLUDED.active, updated_at = EXCLUDED.updated_at,
			edit_scope = EXCLUDED.edit_scope
		WHERE directory_users.updated_at <= EXCLUDED.updated_at`,
		u.ID, u.Name, u.Email, u.Role, u.TeamID, u.Active, u.UpdatedAt, scope)
	return err
}

// Handle is an outbox.Handler for identity's stream.
func Handle(q db.Querier) outbox.Handler {
	return func(ctx context.Context, ev outbox.Event) error {
		switch ev.Type {
		case UserCreated, UserUpdated:
			var u User
			if err := json.Unmarshal(ev.Data, &u); err != nil {
				return nil // undecodable: nothing to retry
			}
			return Upsert(ctx, q, u)
		case TeamDeleted:
			var t TeamEvent
			if err := json.Unmarshal(ev.Data, &t); err != nil {
				return nil
			}
			_, err := q.Exec(ctx, `UPDATE directory_users SET team_id = NULL WHERE team_id = $1`, t.ID)
			return err
		}
		return nil
	}
}

// Sync loads identity's snapshot into the read model, through identity's
// typed client (secret, request id, error categories, bounded body).
func Sync(ctx context.Context, q db.Querier, identityURL, internalSecret string) error {
	users, err := identityapi.New(identityURL, internalSecret).Users(ctx)
	if err != nil {
		return fmt.Errorf("directory sync: %w", err)
	}
	for _, u := range users {
		if err := Upsert(ctx, q, u); err != nil {
			return err
		}
	}
	return nil
}

// UserExists reports whether id is in the read model (active or not:
// records may stay assigned to a deactivated user). Validation of an
// assignee uses Users.Exists, which also asks identity on a miss.
func UserExists(ctx context.Context, q db.Querier, id int64) (bool, error) {
	var ok bool
	err := q.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM directory_users WHERE id = $1)`, id).Scan(&ok)
	return ok, err
}

// Source is the source of truth a miss asks: identity's typed client.
type Source interface {
	User(ctx context.Context, id int64) (identityapi.DirectoryUser, error)
}

// Users answers "is this a user?" from the read model, and on a miss from
// identity, storing what identity answers so the next lookup (and the
// joins that show the assignee's name) finds it locally. The event that
// follows is then a no-op or a newer state, never a rollback (Upsert keeps
// the newest).
type Users struct {
	q      db.Querier
	source Source
}

// NewUsers reads q's model and asks source on a miss.
func NewUsers(q db.Querier, source Source) (*Users, error) {
	if q == nil || source == nil {
		return nil, errors.New("directory: users needs a database and identity's client")
	}
	return &Users{q: q, source: source}, nil
}

// Exists reports whether id is a user, active or not. An id identity does
// not know either is false; identity unreachable is its error (503/504),
// not a false "unknown user".
func (u *Users) Exists(ctx context.Context, id int64) (bool, error) {
	ok, err := UserExists(ctx, u.q, id)
	if err != nil || ok {
		return ok, err
	}
	fresh, err := u.source.User(ctx, id)
	switch {
	case errors.Is(err, identityapi.ErrUserNotFound):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("directory: ask identity for user %d: %w", id, err)
	}
	if err := Upsert(ctx, u.q, fresh); err != nil {
		return false, err
	}
	return true, nil
}

// SyncWithRetry runs Sync until it succeeds or ctx ends, backing off from
// 1 s to 30 s, so a service starts (and serves from its event-fed model)
// without waiting for identity. It reports whether the sync succeeded.
func SyncWithRetry(ctx context.Context, q db.Querier, identityURL, internalSecret string, log *slog.Logger) bool {
	for wait := time.Second; ctx.Err() == nil; wait = min(wait*2, 30*time.Second) {
		err := Sync(ctx, q, identityURL, internalSecret)
		if err == nil {
			log.Info("directory synced from identity")
			return true
		}
		log.Warn("directory sync failed; retrying", "error", err.Error(), "retry_in", wait.String())
		select {
		case <-ctx.Done():
		case <-time.After(wait):
		}
	}
	return false
}
