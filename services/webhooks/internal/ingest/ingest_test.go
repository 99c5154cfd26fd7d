package ingest_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/opencrm/crm/pkg/contract/contactsapi"
	"github.com/opencrm/crm/pkg/contract/contactsapi/contactsapitest"
	"github.com/opencrm/crm/pkg/outbox"
	"github.com/opencrm/crm/services/webhooks/internal/ingest"
	"github.com/opencrm/crm/services/webhooks/internal/store"
)

// events records what the ingester stores; due says how many deliveries
// a call made due (one per event unless set: none when its events were
// stored before or nobody subscribes to them).
type events struct {
	stored [][]store.NewEvent
	due    *int
}

func (e *events) IngestAll(_ context.Context, evs []store.NewEvent) (store.Ingested, error) {
	e.stored = append(e.stored, evs)
	if e.due != nil {
		return store.Ingested{Events: len(evs), Deliveries: *e.due}, nil
	}
	return store.Ingested{Events: len(evs), Deliveries: len(evs)}, nil
}

// TestBatch: what one read of a context's stream becomes: the types
// webhooks publishes are stored as they came (a merged event with its
// object added), others dropped, a contacts.imported expanded into a
// contact.created per contact (a batch call's records as it carries them,
// a CSV import's read from contacts, those still there), and the
// dispatcher woken only when a delivery is due.
func TestBatch(t *testing.T) {
	t.Parallel()
	fake := contactsapitest.NewFake("test-internal-secret-0123456789")
	fake.PutContact(1, map[string]any{"first_name": "Ada"})
	fake.PutContact(2, map[string]any{"first_name": "Grace"})
	_, contacts := fake.Start(t)
	at := time.Date(2026, 11, 27, 9, 30, 0, 0, time.UTC)
	imported := func(ids ...int64) json.RawMessage {
		b, _ := json.Marshal(contactsapi.Imported{IDs: ids})
		return b
	}
	none := 0
	tests := []struct {
		name     string
		source   string
		in       []outbox.Event
		due      *int
		want     [][]store.NewEvent
		wantWake int
	}{
		{"published types stored in order", "contacts", []outbox.Event{
			{ID: 11, Type: "contact.created", AggregateID: "5", OccurredAt: at, Data: json.RawMessage(`{"id":5}`)},
			{ID: 12, Type: "contact.merged_internally", AggregateID: "5", OccurredAt: at, Data: json.RawMessage(`{}`)},
			{ID: 13, Type: "contact.deleted", AggregateID: "5", OccurredAt: at, Data: json.RawMessage(`{"id":5}`)},
		}, nil, [][]store.NewEvent{{
			{Source: "contacts", SourceID: 11, Type: "contact.created", RecordID: "5", Data: json.RawMessage(`{"id":5}`), OccurredAt: at, SchemaVersion: 1},
			{Source: "contacts", SourceID: 13, Type: "contact.deleted", RecordID: "5", Data: json.RawMessage(`{"id":5}`), OccurredAt: at, SchemaVersion: 1},
		}}, 1},
		{"nothing published: nothing stored", "deals", []outbox.Event{
			{ID: 3, Type: "deal.stage_recalculated", AggregateID: "8", OccurredAt: at},
		}, nil, nil, 0},
		{"no delivery due (stored before, or nobody subscribes): no wake", "deals", []outbox.Event{
			{ID: 4, Type: "deal.updated", AggregateID: "8", OccurredAt: at, Data: json.RawMessage(`{"id":8}`)},
		}, &none, [][]store.NewEvent{{
			{Source: "deals", SourceID: 4, Type: "deal.updated", RecordID: "8", Data: json.RawMessage(`{"id":8}`), OccurredAt: at, SchemaVersion: 1},
		}}, 0},
		{"an import expanded, a contact deleted since skipped", "contacts", []outbox.Event{
			{ID: 41, Type: contactsapi.EventContactsImported, AggregateID: "1", OccurredAt: at, Data: imported(1, 2, 99_999)},
		}, nil, [][]store.NewEvent{{
			{Source: "contacts", SourceID: 41, Part: 1, Type: "contact.created", RecordID: "1",
				Data: json.RawMessage(`{"first_name":"Ada","id":1}`), OccurredAt: at, SchemaVersion: 1},
			{Source: "contacts", SourceID: 41, Part: 2, Type: "contact.created", RecordID: "2",
				Data: json.RawMessage(`{"first_name":"Grace","id":2}`), OccurredAt: at, SchemaVersion: 1},
		}}, 1},
		{"a newer release's events: unknown fields carried, unknown types dropped, the version kept", "leads",
			decode(t,
				`{"id":51,"type":"lead.created","schema_version":1,"aggregate_id":"9","occurred_at":"2026-11-27T09:30:00Z","priority":"high","data":{"id":9,"score":12}}`,
				`{"id":52,"type":"lead.teleported","schema_version":1,"aggregate_id":"9","occurred_at":"2026-11-27T09:30:00Z","data":{"id":9}}`,
				`{"id":53,"type":"lead.updated","schema_version":2,"aggregate_id":"9","occurred_at":"2026-11-27T09:30:00Z","data":{"id":9}}`,
				`{"id":54,"type":"lead.updated","aggregate_id":"9","occurred_at":"2026-11-27T09:30:00Z","data":{"id":9}}`,
			), nil, [][]store.NewEvent{{
				{Source: "leads", SourceID: 51, Type: "lead.created", RecordID: "9", Data: json.RawMessage(`{"id":9,"score":12}`), OccurredAt: at, SchemaVersion: 1},
				{Source: "leads", SourceID: 53, Type: "lead.updated", RecordID: "9", Data: json.RawMessage(`{"id":9}`), OccurredAt: at, SchemaVersion: 2},
				{Source: "leads", SourceID: 54, Type: "lead.updated", RecordID: "9", Data: json.RawMessage(`{"id":9}`), OccurredAt: at, SchemaVersion: 1},
			}}, 1},
		{"merged events stored with their object, other members kept", "contacts", []outbox.Event{
			{ID: 61, Type: contactsapi.EventContactMerged, AggregateID: "42", OccurredAt: at,
				Data: json.RawMessage(`{"merge_id":3,"survivor_id":42,"merged_ids":[57,58],"reason":"newer"}`)},
			{ID: 62, Type: contactsapi.EventCompanyMerged, AggregateID: "7", OccurredAt: at,
				Data: json.RawMessage(`{"merge_id":4,"survivor_id":7,"merged_ids":[9]}`)},
			{ID: 63, Type: contactsapi.EventContactMerged, AggregateID: "42", OccurredAt: at, Data: json.RawMessage(`"garbled"`)},
		}, nil, [][]store.NewEvent{{
			{Source: "contacts", SourceID: 61, Type: "contact.merged", RecordID: "42", OccurredAt: at, SchemaVersion: 1,
				Data: json.RawMessage(`{"merge_id":3,"merged_ids":[57,58],"object":"contact","reason":"newer","survivor_id":42}`)},
			{Source: "contacts", SourceID: 62, Type: "company.merged", RecordID: "7", OccurredAt: at, SchemaVersion: 1,
				Data: json.RawMessage(`{"merge_id":4,"merged_ids":[9],"object":"company","survivor_id":7}`)},
			{Source: "contacts", SourceID: 63, Type: "contact.merged", RecordID: "42", OccurredAt: at, SchemaVersion: 1,
				Data: json.RawMessage(`"garbled"`)},
		}}, 1},
		// Contacts 7 and 8 are not in the fake: read back, they would be
		// skipped.
		{"a batch call's records carried: stored as they came, none read back", "contacts", []outbox.Event{
			{ID: 44, Type: contactsapi.EventContactsImported, AggregateID: "7", OccurredAt: at,
				Data: json.RawMessage(`{"ids":[7,8],"records":[{"id":7,"first_name":"Kay"},{"id":8,"first_name":"Lin"}]}`)},
		}, nil, [][]store.NewEvent{{
			{Source: "contacts", SourceID: 44, Part: 1, Type: "contact.created", RecordID: "7",
				Data: json.RawMessage(`{"id":7,"first_name":"Kay"}`), OccurredAt: at, SchemaVersion: 1},
			{Source: "contacts", SourceID: 44, Part: 2, Type: "contact.created", RecordID: "8",
				Data: json.RawMessage(`{"id":8,"first_name":"Lin"}`), OccurredAt: at, SchemaVersion: 1},
		}}, 1},
		{"records not one per id: read back instead", "contacts", []outbox.Event{
			{ID: 45, Type: contactsapi.EventContactsImported, AggregateID: "1", OccurredAt: at,
				Data: json.RawMessage(`{"ids":[1,2],"records":[{"id":1,"first_name":"Stale"}]}`)},
		}, nil, [][]store.NewEvent{{
			{Source: "contacts", SourceID: 45, Part: 1, Type: "contact.created", RecordID: "1",
				Data: json.RawMessage(`{"first_name":"Ada","id":1}`), OccurredAt: at, SchemaVersion: 1},
			{Source: "contacts", SourceID: 45, Part: 2, Type: "contact.created", RecordID: "2",
				Data: json.RawMessage(`{"first_name":"Grace","id":2}`), OccurredAt: at, SchemaVersion: 1},
		}}, 1},
		{"an import naming no contact dropped", "contacts", []outbox.Event{
			{ID: 42, Type: contactsapi.EventContactsImported, AggregateID: "1", OccurredAt: at, Data: json.RawMessage(`{"ids":[]}`)},
			{ID: 43, Type: contactsapi.EventContactsImported, AggregateID: "1", OccurredAt: at, Data: json.RawMessage(`"garbled"`)},
		}, nil, nil, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			st := &events{due: tt.due}
			woken := 0
			in, err := ingest.New(st, contacts, func() { woken++ })
			if err != nil {
				t.Fatal(err)
			}
			if err := in.Batch(tt.source)(t.Context(), tt.in); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, st.stored); diff != "" {
				t.Errorf("stored (-want +got)\n%s", diff)
			}
			if woken != tt.wantWake {
				t.Errorf("woken %d times, want %d", woken, tt.wantWake)
			}
		})
	}
}

// decode reads stream messages as the consumer does (outbox.Event),
// ignoring what it does not know.
func decode(t *testing.T, bodies ...string) []outbox.Event {
	t.Helper()
	evs := make([]outbox.Event, len(bodies))
	for i, b := range bodies {
		if err := json.Unmarshal([]byte(b), &evs[i]); err != nil {
			t.Fatal(err)
		}
	}
	return evs
}
