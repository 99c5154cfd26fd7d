package gateway

import (
	"encoding/json"
	"reflect"
	"time"

	"github.com/opencrm/crm/pkg/contract/contactsapi"
	"github.com/opencrm/crm/pkg/contract/identityapi"
	"github.com/opencrm/crm/pkg/contract/webhooksapi"
)

// streamEvent is a domain event as it travels on a context's stream:
// pkg/outbox.Event, which the gateway cannot import (it needs PostgreSQL's
// driver); pkg/outbox's TestEventMatchesSchemas holds the two together
// through the committed schemas. Its data is typed per event type by
// EventSchemas.
type streamEvent struct {
	ID            int64             `json:"id" minimum:"1" description:"The outbox row id, unique and increasing within the producing context."`
	Type          string            `json:"type"`
	SchemaVersion int               `json:"schema_version" minimum:"1" description:"The version of data's shape for this type; absent (1) on an event relayed by a release before versions."`
	AggregateID   string            `json:"aggregate_id"`
	OccurredAt    time.Time         `json:"occurred_at"`
	Data          json.RawMessage   `json:"data"`
	Trace         map[string]string `json:"trace,omitempty" description:"The W3C trace context of the change that recorded the event."`
}

// eventData is a value of the Go type of each domain event type's data
// whose shape a contract package declares: every type webhooks publishes
// (the record as the API returns it, webhooksapi.Payload) and the
// internal ones of the contract packages. A type whose stream data is not
// what webhooks sends takes its stream type: contact.merged and
// company.merged travel as contactsapi.MergedEvent, to which webhooks
// adds the object (webhooksapi.MergedRecords).
func eventData() map[string]any {
	out := map[string]any{}
	for _, typ := range webhooksapi.EventTypes {
		body := reflect.ValueOf(webhooksapi.Payload(typ))
		out[typ] = reflect.Zero(body.FieldByName("Data").Type()).Interface()
	}
	for typ, data := range map[string]any{
		contactsapi.EventContactsImported: contactsapi.Imported{},
		contactsapi.EventContactMerged:    contactsapi.MergedEvent{},
		contactsapi.EventCompanyMerged:    contactsapi.MergedEvent{},
		"user.created":                    identityapi.DirectoryUser{},
		"user.updated":                    identityapi.DirectoryUser{},
		identityapi.AuditEventType:        identityapi.AuditMessage{},
	} {
		out[typ] = data
	}
	return out
}

// EventSchemas returns the JSON Schema (2020-12) of each domain event type
// as its stream carries it, reflected from the Go wire types like the
// OpenAPI document's schemas: the envelope, type fixed, data typed.
// api/events holds the released ones (TestEventSchemas).
func EventSchemas() (map[string]obj, error) {
	out := map[string]obj{}
	for typ, data := range eventData() {
		set := newSchemaSet()
		env := set.inline(streamEvent{})
		d := set.inline(data)
		if set.err != nil {
			return nil, set.err
		}
		props := env["properties"].(obj)
		props["type"] = obj{"const": typ}
		props["data"] = d
		env["$schema"] = "https://json-schema.org/draft/2020-12/schema"
		env["title"] = typ
		out[typ] = env
	}
	return out, nil
}
