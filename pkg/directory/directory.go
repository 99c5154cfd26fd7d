// Package directory keeps a context's local read model of identity's users
// (name, role, team, active) up to date from identity's events, with a
// snapshot sync at start-up so a context that starts late, or after Redis
// lost its streams, still knows every user. It also defines the identity
// event contract that feeds it.
package directory

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"time"

	"github.com/opencrm/crm/pkg/db"
	"github.com/opencrm/crm/pkg/directory/migrations"
	"github.com/opencrm/crm/pkg/outbox"
	"github.com/opencrm/crm/pkg/svcclient"
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

// User is the data of every user.* event and of the snapshot.
type User struct {
	ID     int64  `json:"id"`
	Name   string `json:"name"`
	Email  string `json:"email"`
	Role   string `json:"role"`
	TeamID *int64 `json:"team_id"`
	Active bool   `json:"active"`
	// EditScope is ScopeCompany, ScopeTeam or ScopeOwn; empty (an event of
	// an older identity) is the default, ScopeCompany.
	EditScope string    `json:"edit_scope,omitempty"`
	UpdatedAt time.Time `json:"updated_at"`
}

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

// Sync loads identity's snapshot (GET {identityURL}/internal/users) into the
// read model, through the same internal client (secret, request id, error
// categories, bounded body) as every other cross-context call.
func Sync(ctx context.Context, q db.Querier, identityURL, internalSecret string) error {
	var body struct {
		Data []User `json:"data"`
	}
	if err := svcclient.New("identity", identityURL, internalSecret).Do(ctx, http.MethodGet, "/internal/users", "", nil, &body); err != nil {
		return fmt.Errorf("directory sync: %w", err)
	}
	for _, u := range body.Data {
		if err := Upsert(ctx, q, u); err != nil {
			return err
		}
	}
	return nil
}

// UserExists reports whether id is a known user (active or not: records
// may stay assigned to a deactivated user).
func UserExists(ctx context.Context, q db.Querier, id int64) (bool, error) {
	var ok bool
	err := q.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM directory_users WHERE id = $1)`, id).Scan(&ok)
	return ok, err
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
