// Package upstream asks the contacts and leads contexts for the email of a
// record through their typed clients (contactsapi, leadsapi); mail never
// reads their schemas.
package upstream

import (
	"context"
	"errors"
	"fmt"

	"github.com/opencrm/crm/pkg/contract/contactsapi"
	"github.com/opencrm/crm/pkg/contract/leadsapi"
	"github.com/opencrm/crm/pkg/problem"
	"github.com/opencrm/crm/services/mail/internal/mail"
)

// Records implements mail.Records.
type Records struct {
	contacts *contactsapi.Client
	leads    *leadsapi.Client
}

var _ mail.Records = (*Records)(nil)

// New returns the lookup over the two clients.
func New(contacts *contactsapi.Client, leads *leadsapi.Client) (*Records, error) {
	if contacts == nil || leads == nil {
		return nil, errors.New("upstream: contacts and leads clients are required")
	}
	return &Records{contacts: contacts, leads: leads}, nil
}

// withEmail is mail's projection of a contact or a lead.
type withEmail struct {
	Email *string `json:"email"`
}

// Email returns the record's email ("" when it has none). A 404 upstream
// is this API's 404 for the record; anything but an answer is 503/504/502.
func (r *Records) Email(ctx context.Context, kind mail.Kind, id int64) (string, error) {
	var out withEmail
	var err error
	name, notFound := "contact", contactsapi.ErrNotFound
	if kind == mail.KindLead {
		name, notFound = "lead", leadsapi.ErrNotFound
		err = r.leads.Lead(ctx, id, &out)
	} else {
		err = r.contacts.Contact(ctx, id, &out)
	}
	var p *problem.Error
	switch {
	case err == nil:
	case errors.Is(err, notFound):
		return "", problem.NotFound(name)
	case errors.As(err, &p) && p.Status < 500:
		// Any other 4xx means we called it wrongly: our fault, and the
		// dependency did not give us the record.
		return "", fmt.Errorf("%s lookup answered %d: %w", name, p.Status, problem.BadGateway(name+" lookup failed"))
	default:
		return "", err
	}
	if out.Email == nil {
		return "", nil
	}
	return *out.Email, nil
}
