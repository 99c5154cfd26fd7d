package webhooksapi

import (
	"time"

	"github.com/opencrm/crm/pkg/contract/contactsapi"
	"github.com/opencrm/crm/pkg/contract/contractsapi"
	"github.com/opencrm/crm/pkg/contract/dealsapi"
	"github.com/opencrm/crm/pkg/contract/leadsapi"
	"github.com/opencrm/crm/pkg/contract/propertyapi"
)

// The typed event bodies below document what each event type carries (the
// OpenAPI document's webhooks section); on the wire they are Event, whose
// data is the record as the API returns it.

// EventHeader is what every event body carries besides data.
type EventHeader struct {
	ID   string `json:"id" description:"evt_ and a number increasing with every event (ping_ and the delivery id for a ping); also the webhook-id header, the same on every attempt, so a receiver can drop repeats." example:"evt_1042"`
	Type string `json:"type" description:"The event type; each body lists the types it is sent for."`
	// SchemaVersion: see Event.
	SchemaVersion int       `json:"schema_version" minimum:"1" example:"1" description:"The version of data's shape for this type: 1 for every type today. The shape of a version only grows (new fields, which a receiver must ignore); a change a receiver could not read comes as a new version, announced in the changelog."`
	CreatedAt     time.Time `json:"created_at" description:"When the change happened."`
}

// ContactEvent is contact.created and contact.updated.
type ContactEvent struct {
	EventHeader
	Data contactsapi.Contact `json:"data"`
}

// CompanyEvent is company.created and company.updated.
type CompanyEvent struct {
	EventHeader
	Data contactsapi.Company `json:"data"`
}

// LeadEvent is lead.created, lead.updated, lead.qualified and
// lead.disqualified.
type LeadEvent struct {
	EventHeader
	Data leadsapi.Lead `json:"data"`
}

// DealEvent is deal.created and deal.updated.
type DealEvent struct {
	EventHeader
	Data dealsapi.Deal `json:"data"`
}

// ContractEvent is contract.created, contract.updated,
// contract.status_changed and contract.executed.
type ContractEvent struct {
	EventHeader
	Data contractsapi.Contract `json:"data"`
}

// PropertyEvent is property.created, property.updated and
// property.deleted: a custom-field definition as GET /properties/{object}
// returns it, the deleted one as it last was, since a receiver mirroring
// the definitions needs its object and name to drop it.
type PropertyEvent struct {
	EventHeader
	Data propertyapi.Property `json:"data"`
}

// DeletedEvent is every record's *.deleted event: the record is gone,
// only its id is sent.
type DeletedEvent struct {
	EventHeader
	Data DeletedRecord `json:"data"`
}

// DeletedRecord names the deleted record.
type DeletedRecord struct {
	ID int64 `json:"id" minimum:"1" example:"42"`
}

// MergedEvent is contact.merged and company.merged: duplicates were
// merged into a survivor. A receiver mirroring the records repoints what
// it holds of each merged id to survivor_id; the merged records' own
// *.deleted events follow or precede it (each is ordered with its own
// record's events, not with the survivor's), and the survivor's combined
// fields come as its *.updated.
type MergedEvent struct {
	EventHeader
	Data MergedRecords `json:"data"`
}

// MergedRecords is the data of a merged event: the contacts context's
// stream data (contactsapi.MergedEvent, whose fields these repeat, as
// TestMergedRecordsCarriesTheStreamData holds) and the object merged, so
// one handler can serve both types.
type MergedRecords struct {
	MergeID  int64   `json:"merge_id" minimum:"1" example:"3" description:"The merge (GET /merges/{id}): its state, field choices and what each context repointed."`
	Survivor int64   `json:"survivor_id" minimum:"1" example:"42" description:"The record the others were merged into; it keeps its id."`
	Merged   []int64 `json:"merged_ids" nullable:"false" minItems:"1" example:"[57]" description:"The records merged into survivor_id: gone, their ids answer 404 merged with merged_into."`
	Object   string  `json:"object" enum:"contact,company" example:"contact" description:"What was merged: contact (contact.merged) or company (company.merged)."`
}

// PingEvent is sent by TestWebhook.
type PingEvent struct {
	EventHeader
	Data PingData `json:"data"`
}

// PingData is the data of a ping: which subscription it tests.
type PingData struct {
	WebhookID int64 `json:"webhook_id" minimum:"1" example:"4"`
}

// Payload returns a value of the typed body an event type is sent with, for
// documentation; nil for an unknown type.
func Payload(eventType string) any {
	switch eventType {
	case ContactCreated, ContactUpdated:
		return ContactEvent{}
	case CompanyCreated, CompanyUpdated:
		return CompanyEvent{}
	case LeadCreated, LeadUpdated, LeadQualified, LeadDisqualified:
		return LeadEvent{}
	case DealCreated, DealUpdated:
		return DealEvent{}
	case ContractCreated, ContractUpdated, ContractStatusChanged, ContractExecuted:
		return ContractEvent{}
	case PropertyCreated, PropertyUpdated, PropertyDeleted:
		return PropertyEvent{}
	case ContactMerged, CompanyMerged:
		return MergedEvent{}
	case ContactDeleted, CompanyDeleted, LeadDeleted, DealDeleted, ContractDeleted:
		return DeletedEvent{}
	case Ping:
		return PingEvent{}
	}
	return nil
}
