// Package ingest turns the contexts' domain events (their outbox streams)
// into the webhooks context's events and pending deliveries.
package ingest

import (
	"context"
	"errors"
	"log/slog"
	"slices"

	"github.com/redis/go-redis/v9"

	"github.com/opencrm/crm/pkg/contract/webhooksapi"
	"github.com/opencrm/crm/pkg/outbox"
	"github.com/opencrm/crm/services/webhooks/internal/store"
)

// Group is the consumer group webhooks reads every stream in.
const Group = "webhooks"

// Ingester stores the events of the streams and wakes the dispatcher when
// a new one may have made deliveries due.
type Ingester struct {
	store *store.Store
	wake  func()
}

// New returns an ingester; wake (may be nil) runs after each new event.
func New(st *store.Store, wake func()) (*Ingester, error) {
	if st == nil {
		return nil, errors.New("ingest: a store is required")
	}
	if wake == nil {
		wake = func() {}
	}
	return &Ingester{store: st, wake: wake}, nil
}

// Handler handles the events of one context's stream: a type webhooks
// does not publish is acknowledged and dropped; the others are stored
// once (the outbox id is the key) with their deliveries.
func (i *Ingester) Handler(source string) outbox.Handler {
	return func(ctx context.Context, ev outbox.Event) error {
		if !slices.Contains(webhooksapi.EventTypes, ev.Type) {
			return nil
		}
		added, err := i.store.Ingest(ctx, store.NewEvent{
			Source: source, SourceID: ev.ID, Type: ev.Type, RecordID: ev.AggregateID,
			Data: ev.Data, OccurredAt: ev.OccurredAt,
		})
		if err != nil {
			return err
		}
		if added {
			i.wake()
		}
		return nil
	}
}

// Consumers returns one consumer per stream of webhooksapi.Streams.
func (i *Ingester) Consumers(rdb redis.UniversalClient, name string, log *slog.Logger) []*outbox.Consumer {
	out := make([]*outbox.Consumer, 0, len(webhooksapi.Streams))
	for _, s := range webhooksapi.Streams {
		out = append(out, &outbox.Consumer{
			Redis: rdb, Stream: outbox.Stream(s), Group: Group, Name: name, Handle: i.Handler(s), Log: log,
		})
	}
	return out
}
