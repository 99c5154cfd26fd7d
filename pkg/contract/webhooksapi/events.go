package webhooksapi

import "slices"

// Event types an integration can subscribe to. Every one but ping comes
// from a context's domain events; ping is sent only by TestWebhook.
const (
	ContactCreated = "contact.created"
	ContactUpdated = "contact.updated"
	ContactDeleted = "contact.deleted"
	CompanyCreated = "company.created"
	CompanyUpdated = "company.updated"
	CompanyDeleted = "company.deleted"
	// Duplicates were merged into a survivor (POST /contacts/{id}/merge,
	// /companies/{id}/merge): each merged record's own contact.deleted or
	// company.deleted says only that it is gone, this says where it went.
	ContactMerged         = "contact.merged"
	CompanyMerged         = "company.merged"
	LeadCreated           = "lead.created"
	LeadUpdated           = "lead.updated"
	LeadDeleted           = "lead.deleted"
	LeadQualified         = "lead.qualified"
	LeadDisqualified      = "lead.disqualified"
	DealCreated           = "deal.created"
	DealUpdated           = "deal.updated"
	DealDeleted           = "deal.deleted"
	ContractCreated       = "contract.created"
	ContractUpdated       = "contract.updated"
	ContractDeleted       = "contract.deleted"
	ContractStatusChanged = "contract.status_changed"
	ContractExecuted      = "contract.executed"
	// A custom-field definition of contacts, companies, leads or deals
	// (GET /properties/{object}) was created, changed or deleted.
	PropertyCreated = "property.created"
	PropertyUpdated = "property.updated"
	PropertyDeleted = "property.deleted"
	Ping            = "ping"
	// All subscribes to every event type, present and future.
	All = "*"
)

// EventTypes is every event type fed from the contexts, in a stable order.
var EventTypes = []string{
	ContactCreated, ContactUpdated, ContactDeleted,
	CompanyCreated, CompanyUpdated, CompanyDeleted,
	ContactMerged, CompanyMerged,
	LeadCreated, LeadUpdated, LeadDeleted, LeadQualified, LeadDisqualified,
	DealCreated, DealUpdated, DealDeleted,
	ContractCreated, ContractUpdated, ContractDeleted, ContractStatusChanged, ContractExecuted,
	PropertyCreated, PropertyUpdated, PropertyDeleted,
}

// ValidEventType reports a type a subscription may name: one of EventTypes
// or All.
func ValidEventType(t string) bool { return t == All || slices.Contains(EventTypes, t) }

// Streams are the contexts whose event streams feed webhooks.
var Streams = []string{"contacts", "leads", "deals", "contracts"}
