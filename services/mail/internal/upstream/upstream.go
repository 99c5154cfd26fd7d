// Package upstream asks the contacts and leads contexts for the email of a
// record through their internal APIs; mail never reads their schemas.
package upstream

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/opencrm/crm/pkg/problem"
	"github.com/opencrm/crm/pkg/svcclient"
	"github.com/opencrm/crm/services/mail/internal/mail"
)

// Records implements mail.Records over GET /internal/contacts/{id} and
// GET /internal/leads/{id}.
type Records struct {
	contacts, leads *svcclient.Client
}

var _ mail.Records = (*Records)(nil)

// New returns the lookup over the two clients.
func New(contacts, leads *svcclient.Client) (*Records, error) {
	if contacts == nil || leads == nil {
		return nil, errors.New("upstream: contacts and leads clients are required")
	}
	return &Records{contacts: contacts, leads: leads}, nil
}

// Email returns the record's email ("" when it has none). A 404 upstream
// is this API's 404 for the record; anything but an answer is 503/504/502
// from svcclient.
func (r *Records) Email(ctx context.Context, kind mail.Kind, id int64) (string, error) {
	c, path, name := r.contacts, "/internal/contacts/", "contact"
	if kind == mail.KindLead {
		c, path, name = r.leads, "/internal/leads/", "lead"
	}
	var out struct {
		Data struct {
			Email *string `json:"email"`
		} `json:"data"`
	}
	err := c.Do(ctx, http.MethodGet, path+strconv.FormatInt(id, 10), "", nil, &out)
	var p *problem.Error
	switch {
	case err == nil:
	case errors.As(err, &p) && p.Status == http.StatusNotFound:
		return "", problem.NotFound(name)
	case errors.As(err, &p) && p.Status < 500:
		// Any other 4xx means we called it wrongly: our fault, and the
		// dependency did not give us the record.
		return "", fmt.Errorf("%s lookup answered %d: %w", name, p.Status, problem.BadGateway(name+" lookup failed"))
	default:
		return "", err
	}
	if out.Data.Email == nil {
		return "", nil
	}
	return *out.Data.Email, nil
}
