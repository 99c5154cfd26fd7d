package mailapi

import (
	"net/http"

	"github.com/opencrm/crm/pkg/contract/envelope"
	"github.com/opencrm/crm/pkg/contract/route"
)

// Service is the context's name: it keys the gateway's upstream addresses.
const Service = "mail"

// Resource is the integration-token scope family of emails and mailboxes.
const Resource = "emails"

// The public routes of mail: synced emails, mailboxes, and the emails
// linked to a contact or a lead (under their paths, served here).
var (
	StoreEmail = route.Route{Method: http.MethodPost, Path: "/emails", Service: Service, Auth: route.JWT, Resource: Resource,
		Tag: "Emails", Summary: "Store a synced email message (a repeated message_id is a no-op)",
		Request: EmailInput{}, Status: http.StatusCreated, Response: envelope.Record[Email]{}, Message: "email stored",
		Alternatives: []route.Alternative{{Status: http.StatusOK,
			Description: "The message_id was already stored; the stored message is returned (only id and message_id to a caller who may not read it)",
			Message:     "email already stored",
			Responses:   []any{envelope.Record[Email]{}, envelope.Record[EmailRef]{}}}}}
	ListMailboxes = route.Route{Method: http.MethodGet, Path: "/mailboxes", Service: Service, Auth: route.JWT, Resource: Resource,
		Tag: "Emails", Summary: "The caller's IMAP mailboxes (every mailbox for an admin)", Response: envelope.List[Mailbox]{}}
	ConnectMailbox = route.Route{Method: http.MethodPost, Path: "/mailboxes", Service: Service, Auth: route.JWT, Resource: Resource,
		Tag: "Emails", Summary: "Connect an IMAP mailbox (the password is sealed and never returned); the first sync is queued",
		Request: MailboxInput{}, Status: http.StatusCreated, Response: envelope.Record[Mailbox]{},
		Message: "mailbox connected; the first sync is queued"}
	GetMailbox = route.Route{Method: http.MethodGet, Path: "/mailboxes/{id}", Service: Service, Auth: route.JWT, Resource: Resource,
		Tag: "Emails", Summary: "Get a mailbox (owner or admin)", Response: envelope.Record[Mailbox]{}}
	UpdateMailbox = route.Route{Method: http.MethodPut, Path: "/mailboxes/{id}", Service: Service, Auth: route.JWT, Resource: Resource,
		Tag: "Emails", Summary: "Update a mailbox (owner or admin; changing host, port or username, or turning TLS off, needs the password)",
		Request: MailboxInput{}, Response: envelope.Record[Mailbox]{}, Message: "mailbox updated; a sync is queued"}
	DisconnectMailbox = route.Route{Method: http.MethodDelete, Path: "/mailboxes/{id}", Service: Service, Auth: route.JWT, Resource: Resource,
		Tag: "Emails", Summary: "Disconnect a mailbox (its messages stay)", Response: envelope.Deleted{}, Message: "mailbox disconnected"}
	SyncMailbox = route.Route{Method: http.MethodPost, Path: "/mailboxes/{id}/sync", Service: Service, Auth: route.JWT, Resource: Resource,
		Tag: "Emails", Summary: "Queue a sync of the mailbox now", Response: envelope.Record[Mailbox]{}, Message: "sync queued"}
	GetEmail = route.Route{Method: http.MethodGet, Path: "/emails/{id}", Service: Service, Auth: route.JWT, Resource: Resource,
		Tag: "Emails", Summary: "One email: a message synced from a mailbox is private to its owner and admins unless read through a contact or lead it is linked to",
		Query: []route.Param{
			route.ID("contact_id", "Read through this linked contact."), route.ID("lead_id", "Read through this linked lead."),
		},
		Response: envelope.Record[Email]{}}

	ListContactEmails = route.Route{Method: http.MethodGet, Path: "/contacts/{id}/linked-emails", Service: Service, Auth: route.JWT, Resource: Resource,
		Tag: "Contacts", Summary: "Synced emails linked to the contact, newest first",
		Query: route.PageQuery(), Response: envelope.Page[EmailSummary]{}}
	ListLeadEmails = route.Route{Method: http.MethodGet, Path: "/leads/{id}/linked-emails", Service: Service, Auth: route.JWT, Resource: Resource,
		Tag: "Leads", Summary: "Synced emails linked to the lead, newest first",
		Query: route.PageQuery(), Response: envelope.Page[EmailSummary]{}}
)

// Routes are the public routes mail serves, in the document's order.
var Routes = []route.Route{
	StoreEmail, ListMailboxes, ConnectMailbox, GetMailbox, UpdateMailbox, DisconnectMailbox, SyncMailbox, GetEmail,
	ListContactEmails, ListLeadEmails,
}
