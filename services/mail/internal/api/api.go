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
}

type handler struct{ svc *mail.Service }

// New returns the routes of the mail service.
func New(d Deps) (http.Handler, error) {
	if d.Service == nil || d.Verifier == nil {
		return nil, errors.New("api: service and verifier are required")
	}
	h := &handler{svc: d.Service}
	mux := http.NewServeMux()
	jwt := func(pattern string, fn httpx.HandlerFunc) { mux.Handle(pattern, d.Verifier.Require(fn)) }
	jwt("POST /emails", h.createEmail)
	jwt("GET /emails/{id}", h.getEmail)
	jwt("GET /contacts/{id}/linked-emails", h.linked(mail.KindContact))
	jwt("GET /leads/{id}/linked-emails", h.linked(mail.KindLead))
	jwt("POST /mailboxes", h.createMailbox)
	jwt("GET /mailboxes", h.listMailboxes)
	jwt("GET /mailboxes/{id}", h.getMailbox)
	jwt("PUT /mailboxes/{id}", h.updateMailbox)
	jwt("DELETE /mailboxes/{id}", h.deleteMailbox)
	jwt("POST /mailboxes/{id}/sync", h.syncMailbox)
	return httpx.Routes(mux), nil
}

func caller(r *http.Request) mail.Caller {
	c := auth.FromContext(r.Context())
	return mail.Caller{UserID: c.UserID(), Admin: c.IsAdmin()}
}

// createEmail is POST /emails: 201 for a new message, 200 with the stored
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
	m, created, err := h.svc.CreateMessage(r.Context(), in, c.UserID)
	if err != nil {
		return err
	}
	switch {
	case created:
		httpx.Created(w, m, "email stored")
	case c.CanRead(m.Summary):
		httpx.Updated(w, m, "email already stored")
	default:
		httpx.Updated(w, mail.Ref{ID: m.ID, MessageID: m.MessageID}, "email already stored")
	}
	return nil
}

// getEmail is GET /emails/{id}[?contact_id=|?lead_id=]: the message if the
// caller may read it, or as one of the named record's linked emails.
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
	httpx.OK(w, m)
	return nil
}

// readVia reads the optional contact_id or lead_id (at most one) of
// GET /emails/{id}.
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
		list, total, err := h.svc.Linked(r.Context(), q)
		if err != nil {
			return err
		}
		// success as well as the page, so clients of either list shape
		// (docs/api.md) read it.
		page := envelope.NewPage(list, q.Query, total)
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
	httpx.Created(w, mb, "mailbox connected; the first sync is queued")
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
	httpx.Updated(w, mb, "mailbox updated; a sync is queued")
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
	httpx.Deleted(w, "mailbox disconnected")
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
	httpx.Updated(w, mb, "sync queued")
	return nil
}

func mailboxID(r *http.Request) (int64, error) {
	id, err := httpx.PathID(r, "id")
	if err != nil {
		return 0, problem.NotFound("mailbox")
	}
	return id, nil
}
