// Package history records and reads the field-level history of the records
// a context owns (see docs/decisions.md, "Record history"). Triggers write
// it in the statement that changes a record (history_track in the
// migration set); this package gives those triggers who and how, through
// the session settings of the connection a request takes (Session), and
// reads a record's entries back (List).
package history

import (
	"context"
	"encoding/json"
	"io/fs"
	"strconv"

	"github.com/opencrm/crm/pkg/auth"
	"github.com/opencrm/crm/pkg/contract/historyapi"
	"github.com/opencrm/crm/pkg/db"
	"github.com/opencrm/crm/pkg/history/migrations"
	"github.com/opencrm/crm/pkg/problem"
)

// Migrations is the history migration set: the history table and the
// functions a context's own migration calls to track a table:
//
//	SELECT history_track('contacts', 'contact', ARRAY['search_text', 'sort_name']);
var Migrations fs.FS = migrations.FS

// Migrate creates the history table and functions in d's schema; run it
// before the context's own migrations, which track their tables.
func Migrate(ctx context.Context, d *db.DB) error {
	return db.Migrate(ctx, d, "history", Migrations)
}

// settings are the session settings history_capture reads.
var settings = []string{"crm.actor", "crm.via", "crm.request_id"}

// Session is the pool option that gives the triggers who and how: every
// connection taken for a request carries its actor, channel and request
// id (db.WithSession).
func Session() db.Option { return SessionIf(func() bool { return true }) }

// SessionIf is Session while tracked answers true: a pool whose schema
// has no history (known only once it is migrated) sets nothing, and so
// costs no round trip when a request takes a connection.
func SessionIf(tracked func() bool) db.Option {
	return db.WithSession(settings, func(ctx context.Context) []string {
		if !tracked() {
			return nil
		}
		return values(ctx)
	})
}

// Tracked reports whether q's schema holds record history.
func Tracked(ctx context.Context, q db.Querier) (bool, error) {
	var ok bool
	err := q.QueryRow(ctx, `SELECT to_regclass('history') IS NOT NULL`).Scan(&ok)
	return ok, err
}

type actorKey struct{}
type viaKey struct{}

// WithActor makes ctx's changes the actor's, whatever credential the
// request carried: a system job (Type system), the public intake's key.
func WithActor(ctx context.Context, a historyapi.HistoryActor) context.Context {
	return context.WithValue(ctx, actorKey{}, a)
}

// WithVia records ctx's changes as made through via (historyapi.ViaImport,
// ViaBatch...); a request without one is ViaAPI, other work ViaSystem.
func WithVia(ctx context.Context, via string) context.Context {
	return context.WithValue(ctx, viaKey{}, via)
}

// ActorOf is who ctx acts for: the actor WithActor set, else the caller
// of the request (a person, or an integration token's service user), else
// nobody (ok false).
func ActorOf(ctx context.Context) (a historyapi.HistoryActor, ok bool) {
	if a, ok := ctx.Value(actorKey{}).(historyapi.HistoryActor); ok {
		return a, true
	}
	c := auth.FromContext(ctx)
	if c == nil {
		return historyapi.HistoryActor{}, false
	}
	id, err := strconv.ParseInt(c.Subject, 10, 64)
	a = historyapi.HistoryActor{Type: historyapi.ActorUser, Name: c.Name}
	if err == nil {
		a.ID = &id
	}
	if c.Scoped() {
		a.Type = historyapi.ActorToken
	}
	return a, true
}

// values are the settings' values for ctx: nil when ctx acts for nobody
// and names no channel (work the system does), so they are cleared.
func values(ctx context.Context) []string {
	a, ok := ActorOf(ctx)
	via, _ := ctx.Value(viaKey{}).(string)
	if !ok && via == "" {
		return nil
	}
	if !ok {
		a = historyapi.HistoryActor{Type: historyapi.ActorSystem}
	}
	if via == "" {
		via = historyapi.ViaAPI
		if a.Type == historyapi.ActorSystem {
			via = historyapi.ViaSystem
		}
	}
	actor, err := json.Marshal(a)
	if err != nil { // a struct of strings and an int: cannot fail
		return nil
	}
	return []string{string(actor), via, problem.RequestID(ctx)}
}
