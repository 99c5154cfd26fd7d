// Package api serves the mail context's HTTP routes: storing synced
// messages, listing the messages linked to a contact or lead, and managing
// the IMAP mailboxes they are synced from. Every route needs a JWT.
package api

import (
	"errors"
	"net/http"
	"net/url"
	"strconv"

	"github.com/opencrm/crm/pkg/auth"
	"github.com/opencrm/crm/pkg/contract/envelope"
	"github.com/opencrm/crm/pkg/contract/mailapi"
	"github.com/opencrm/crm/pkg/contract/route"
	"github.com/opencrm/crm/pkg/httpx"
	"github.com/opencrm/crm/pkg/list/listparam"
	"github.com/opencrm/crm/pkg/problem"
	"github.com/opencrm/crm/pkg/validate"
	"github.com/opencrm/crm/services/mail/internal/mail"
)

// Deps are the handlers' collaborators.
type Deps struct {
	Service  *mail.Service
	Verifier *auth.Verifier
	// Privacy serves the internal routes of a person's export and
	// erasure; they are not mounted when it is nil.
	Privacy *Privacy
}

type handler struct{ svc *mail.Service }

// New returns the routes of the mail service: each public handler is
// mounted on its declaration in mailapi behind the declaration's policy
// (a JWT for every mail route).
func New(d Deps) (http.Handler, error) {
	if d.Service == nil || d.Verifier == nil {
		return nil, errors.New("api: service and verifier are required")
	}
	h := &handler{svc: d.Service}
	mux := http.NewServeMux()
	guards := httpx.Guards{route.JWT: d.Verifier.Require}
	for _, m := range []struct {
		route   route.Route
		handler httpx.HandlerFunc
	}{
		{mailapi.StoreEmail, h.createEmail},
		{mailapi.GetEmail, h.getEmail},
		{mailapi.ListContactEmails, h.linked(mail.KindContact)},
		{mailapi.ListLeadEmails, h.linked(mail.KindLead)},
		{mailapi.ConnectMailbox, h.createMailbox},
		{mailapi.ListMailboxes, h.listMailboxes},
		{mailapi.GetMailbox, h.getMailbox},
		{mailapi.UpdateMailbox, h.updateMailbox},
		{mailapi.DisconnectMailbox, h.deleteMailbox},
		{mailapi.SyncMailbox, h.syncMailbox},
	} {
		guards.Mount(mux, m.route, m.handler)
	}
	if err := mountPrivacy(mux, d.Privacy); err != nil {
		return nil, err
	}
	mountMerges(mux, d)
	return httpx.Routes(mux), nil
}

// created answers op's 201 with the record and its Location, the URL a
// client reads the record at, built from that route's declaration.
func created(w http.ResponseWriter, op route.Route, location string, v any) {
	w.Header().Set("Location", location)
	httpx.Created(w, v, op.Message)
}

func caller(r *http.Request) mail.Caller {
	c := auth.FromContext(r.Context())
	return mail.Caller{UserID: c.UserID(), Admin: c.IsAdmin()}
}

// createEmail answers mailapi.StoreEmail: 201 for a new message, 200 with the stored
// one when the message_id is known. When the stored copy came from a
// mailbox the caller may not read, the 200 names it (id, message_id) without
// its content: the caller learns only what it sent, that the message_id is
// taken, and the id to read it through a linked contact or lead.
func (h *handler) createEmail(w http.ResponseWriter, r *http.Request) error {
	var in mail.MessageInput
	if err := httpx.Decode(w, r, &in, httpx.MaxJSONBody); err != nil {
		return err
	}
	c := caller(r)
	m, isNew, err := h.svc.CreateMessage(r.Context(), in, c.UserID)
	if err != nil {
		return err
	}
	switch {
	case isNew:
		created(w, mailapi.StoreEmail, mailapi.GetEmail.Location(m.ID), m.Email)
	case c.CanRead(m):
		httpx.Updated(w, m.Email, storedAgain)
	default:
		httpx.Updated(w, mail.Ref{ID: m.ID, MessageID: m.MessageID}, storedAgain)
	}
	return nil
}

// storedAgain is the message of StoreEmail's 200, its declared
// alternative answer.
var storedAgain = mailapi.StoreEmail.Alternatives[0].Message

// getEmail answers mailapi.GetEmail (?contact_id= or ?lead_id=): the
// message if the caller may read it, or as one of the named record's
// linked emails.
func (h *handler) getEmail(w http.ResponseWriter, r *http.Request) error {
	id, err := httpx.PathID(r, "id")
	if err != nil {
		return problem.NotFound("email")
	}
	via, err := readVia(r.URL.Query())
	if err != nil {
		return err
	}
	m, err := h.svc.Message(r.Context(), caller(r), id, via)
	if err != nil {
		return err
	}
	httpx.OK(w, m.Email)
	return nil
}

// readVia reads the optional contact_id or lead_id (at most one) of
// mailapi.GetEmail.
func readVia(q url.Values) (*mail.RecordRef, error) {
	var v validate.Errors
	var via *mail.RecordRef
	for _, kind := range []mail.Kind{mail.KindContact, mail.KindLead} {
		name := string(kind) + "_id"
		if !q.Has(name) {
			continue
		}
		n, err := strconv.ParseInt(q.Get(name), 10, 64)
		switch {
		case err != nil || n < 1:
			v.Add(name, "must be a positive integer")
		case via != nil:
			v.Add(name, "cannot be combined with contact_id")
		default:
			via = &mail.RecordRef{Kind: kind, ID: n}
		}
	}
	return via, v.Err()
}

// linkedOptions accept only the newest-first order linked emails have.
var linkedOptions = listparam.Options{Sorts: []string{"sent_at"}, DefaultSort: "sent_at"}

func (h *handler) linked(kind mail.Kind) httpx.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		id, err := httpx.PathID(r, "id")
		if err != nil {
			return problem.NotFound(string(kind))
		}
		p := listparam.Parse(r.URL.Query(), linkedOptions)
		if err := p.Err(); err != nil {
			return err
		}
		q := mail.LinkedQuery{Query: p.Query(), Record: mail.RecordRef{Kind: kind, ID: id}}
		msgs, total, err := h.svc.Linked(r.Context(), q)
		if err != nil {
			return err
		}
		// success as well as the page, so clients of either list shape
		// (docs/api.md) read it.
		page := envelope.NewPage(msgs, q.Query, total)
		page.Success = true
		httpx.JSON(w, http.StatusOK, page)
		return nil
	}
}

// maxMailboxBody bounds a mailbox body: a few short connection settings.
const maxMailboxBody = 16 << 10

func (h *handler) createMailbox(w http.ResponseWriter, r *http.Request) error {
	var in mail.MailboxInput
	if err := httpx.Decode(w, r, &in, maxMailboxBody); err != nil {
		return err
	}
	mb, err := h.svc.CreateMailbox(r.Context(), caller(r), in)
	if err != nil {
		return err
	}
	created(w, mailapi.ConnectMailbox, mailapi.GetMailbox.Location(mb.ID), mb)
	return nil
}

func (h *handler) listMailboxes(w http.ResponseWriter, r *http.Request) error {
	list, err := h.svc.Mailboxes(r.Context(), caller(r))
	if err != nil {
		return err
	}
	httpx.OK(w, list)
	return nil
}

func (h *handler) getMailbox(w http.ResponseWriter, r *http.Request) error {
	id, err := mailboxID(r)
	if err != nil {
		return err
	}
	mb, err := h.svc.Mailbox(r.Context(), caller(r), id)
	if err != nil {
		return err
	}
	httpx.OK(w, mb)
	return nil
}

func (h *handler) updateMailbox(w http.ResponseWriter, r *http.Request) error {
	id, err := mailboxID(r)
	if err != nil {
		return err
	}
	var in mail.MailboxInput
	if err := httpx.Decode(w, r, &in, maxMailboxBody); err != nil {
		return err
	}
	mb, err := h.svc.UpdateMailbox(r.Context(), caller(r), id, in)
	if err != nil {
		return err
	}
	httpx.Updated(w, mb, mailapi.UpdateMailbox.Message)
	return nil
}

func (h *handler) deleteMailbox(w http.ResponseWriter, r *http.Request) error {
	id, err := mailboxID(r)
	if err != nil {
		return err
	}
	if err := h.svc.DeleteMailbox(r.Context(), caller(r), id); err != nil {
		return err
	}
	httpx.Deleted(w, mailapi.DisconnectMailbox.Message)
	return nil
}

func (h *handler) syncMailbox(w http.ResponseWriter, r *http.Request) error {
	id, err := mailboxID(r)
	if err != nil {
		return err
	}
	mb, err := h.svc.SyncNow(r.Context(), caller(r), id)
	if err != nil {
		return err
	}
	httpx.Updated(w, mb, mailapi.SyncMailbox.Message)
	return nil
}

func mailboxID(r *http.Request) (int64, error) {
	id, err := httpx.PathID(r, "id")
	if err != nil {
		return 0, problem.NotFound("mailbox")
	}
	return id, nil
}
