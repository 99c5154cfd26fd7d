package ingest

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"

	"github.com/redis/go-redis/v9"

	"github.com/opencrm/crm/pkg/auth"
	"github.com/opencrm/crm/pkg/directory"
	"github.com/opencrm/crm/pkg/outbox"
	"github.com/opencrm/crm/services/webhooks/internal/store"
)

// Owners handles identity's user.* events (pkg/directory's stream): a
// subscription's owner that loses access loses its subscriptions. Revoking
// an integration token deactivates its service user, deactivating a
// person does the same, and demoting an admin takes away the
// subscriptions it made as one (see store.ApplyOwner).
type Owners struct {
	store *store.Store
	log   *slog.Logger
}

// NewOwners returns the handler of identity's stream.
func NewOwners(st *store.Store, log *slog.Logger) (*Owners, error) {
	if st == nil || log == nil {
		return nil, errors.New("ingest: a store and a logger are required")
	}
	return &Owners{store: st, log: log}, nil
}

// Handle applies one event of identity's stream; other types (teams) and
// undecodable data are acknowledged and dropped.
func (o *Owners) Handle(ctx context.Context, ev outbox.Event) error {
	if ev.Type != directory.UserCreated && ev.Type != directory.UserUpdated {
		return nil
	}
	var u directory.User
	if err := json.Unmarshal(ev.Data, &u); err != nil || u.ID == 0 {
		return nil
	}
	n, err := o.store.ApplyOwner(ctx, store.Owner{ID: u.ID, Active: u.Active, Admin: u.Role == auth.RoleAdmin, UpdatedAt: u.UpdatedAt})
	if n > 0 {
		o.log.Info("webhook subscriptions disabled: their owner lost access",
			"owner", u.ID, "subscriptions", n, "active", u.Active, "role", u.Role)
	}
	return err
}

// Consumer reads stream (identity's: directory.Stream) in the webhooks
// group.
func (o *Owners) Consumer(rdb redis.UniversalClient, stream, name string) *outbox.Consumer {
	return &outbox.Consumer{Redis: rdb, Stream: stream, Group: Group, Name: name, Handle: o.Handle, Log: o.log}
}
