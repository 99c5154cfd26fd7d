// Package ingest turns the contexts' domain events (their outbox streams)
// into the webhooks context's events and pending deliveries.
package ingest

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"slices"
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/opencrm/crm/pkg/contract/contactsapi"
	"github.com/opencrm/crm/pkg/contract/webhooksapi"
	"github.com/opencrm/crm/pkg/outbox"
	"github.com/opencrm/crm/services/webhooks/internal/store"
)

// Group is the consumer group webhooks reads every stream in.
const Group = "webhooks"

// Ingester stores the events of the streams and wakes the dispatcher when
// they made deliveries due.
type Ingester struct {
	events   Events
	contacts Contacts
	wake     func()
}

// Events stores events once each with their pending deliveries, and
// says how many of either were new (the store).
type Events interface {
	IngestAll(ctx context.Context, evs []store.NewEvent) (store.Ingested, error)
}

// Contacts reads the records a contacts.imported event names (the
// contacts context's typed client).
type Contacts interface {
	ContactsByID(ctx context.Context, ids []int64) ([]json.RawMessage, error)
}

// New returns an ingester; wake (may be nil) runs after each read that
// made deliveries due. A read that made none (nobody subscribes to its
// types) does not wake the dispatcher: a batch call puts a hundred events
// on a stream, and each wake is a dispatch query.
func New(events Events, contacts Contacts, wake func()) (*Ingester, error) {
	if events == nil || contacts == nil {
		return nil, errors.New("ingest: a store and a contacts reader are required")
	}
	if wake == nil {
		wake = func() {}
	}
	return &Ingester{events: events, contacts: contacts, wake: wake}, nil
}

// Handler handles one event of a context's stream; see Batch.
func (i *Ingester) Handler(source string) outbox.Handler {
	batch := i.Batch(source)
	return func(ctx context.Context, ev outbox.Event) error { return batch(ctx, []outbox.Event{ev}) }
}

// Batch handles the events of one read of a context's stream in one
// transaction: a type webhooks does not publish is acknowledged and
// dropped; the others are stored once (the outbox id is the key) with
// their deliveries, a contacts.imported expanded into its contacts.
func (i *Ingester) Batch(source string) outbox.BatchHandler {
	return func(ctx context.Context, in []outbox.Event) error {
		var evs []store.NewEvent
		for _, ev := range in {
			switch {
			case source == "contacts" && ev.Type == contactsapi.EventContactsImported:
				more, err := i.imported(ctx, source, ev)
				if err != nil {
					return err
				}
				evs = append(evs, more...)
			case slices.Contains(webhooksapi.EventTypes, ev.Type):
				data := ev.Data
				if object, ok := mergedObject[ev.Type]; ok {
					data = withObject(data, object)
				}
				evs = append(evs, store.NewEvent{Source: source, SourceID: ev.ID, Type: ev.Type, RecordID: ev.AggregateID,
					Data: data, OccurredAt: ev.OccurredAt, SchemaVersion: ev.Version()})
			}
		}
		if len(evs) == 0 {
			return nil
		}
		added, err := i.events.IngestAll(ctx, evs)
		if err != nil {
			return err
		}
		if added.Deliveries > 0 {
			i.wake()
		}
		return nil
	}
}

// mergedObject is the object of each merged event type: contacts
// publishes contactsapi.MergedEvent, which does not name it, and webhooks
// sends webhooksapi.MergedRecords, which does, so that a receiver handles
// both types in one place.
var mergedObject = map[string]string{
	webhooksapi.ContactMerged: "contact",
	webhooksapi.CompanyMerged: "company",
}

// withObject is data with its object member set, every other member (a
// newer release's too) kept as it came; data that is no JSON object is
// kept as it is.
func withObject(data json.RawMessage, object string) json.RawMessage {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(data, &m); err != nil || m == nil {
		return data
	}
	m["object"], _ = json.Marshal(object)
	out, err := json.Marshal(m)
	if err != nil {
		return data
	}
	return out
}

// imported expands a contacts.imported event into one contact.created per
// contact, each carrying the record as the API returns it: a batch call's
// event carries the records as the call answered them; a CSV import's
// names only their ids, and its records are read from contacts in one
// call, a contact deleted since skipped (its contact.deleted follows on
// the stream).
func (i *Ingester) imported(ctx context.Context, source string, ev outbox.Event) ([]store.NewEvent, error) {
	var imp contactsapi.ImportedRaw
	if err := json.Unmarshal(ev.Data, &imp); err != nil || len(imp.IDs) == 0 {
		return nil, nil // nothing to expand: acknowledged and dropped
	}
	created := func(n int, id int64, rec json.RawMessage) store.NewEvent {
		return store.NewEvent{Source: source, SourceID: ev.ID, Part: n + 1,
			Type: webhooksapi.ContactCreated, RecordID: strconv.FormatInt(id, 10), Data: rec, OccurredAt: ev.OccurredAt,
			SchemaVersion: outbox.SchemaVersion}
	}
	if carried := imp.Carried(); carried != nil {
		evs := make([]store.NewEvent, len(carried))
		for n, rec := range carried {
			evs[n] = created(n, imp.IDs[n], rec)
		}
		return evs, nil
	}
	records, err := i.contacts.ContactsByID(ctx, imp.IDs)
	if err != nil {
		return nil, err
	}
	evs := make([]store.NewEvent, 0, len(records))
	for n, rec := range records {
		var id struct {
			ID int64 `json:"id"`
		}
		if json.Unmarshal(rec, &id) != nil || id.ID == 0 {
			continue
		}
		evs = append(evs, created(n, id.ID, rec))
	}
	return evs, nil
}

// Consumers returns one consumer per stream of webhooksapi.Streams.
func (i *Ingester) Consumers(rdb redis.UniversalClient, name string, log *slog.Logger) []*outbox.Consumer {
	out := make([]*outbox.Consumer, 0, len(webhooksapi.Streams))
	for _, s := range webhooksapi.Streams {
		out = append(out, &outbox.Consumer{
			Redis: rdb, Stream: outbox.Stream(s), Group: Group, Name: name, HandleBatch: i.Batch(s), Log: log,
		})
	}
	return out
}
