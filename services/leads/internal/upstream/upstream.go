// Package upstream calls the contacts and deals contexts' internal APIs
// (docs/architecture.md) through pkg/svcclient, which maps a service that
// is down, slow or broken to 503, 504 or 502 and passes 404/409/422 on.
package upstream

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"

	"github.com/opencrm/crm/pkg/problem"
	"github.com/opencrm/crm/pkg/svcclient"
	"github.com/opencrm/crm/services/leads/internal/leads"
)

// MatchLimit bounds how many similar companies are returned.
const MatchLimit = 10

type created struct {
	Data struct {
		ID int64 `json:"id"`
	} `json:"data"`
}

type list struct {
	Data []json.RawMessage `json:"data"`
}

// Contacts implements leads.Contacts.
type Contacts struct{ c *svcclient.Client }

// NewContacts calls the contacts service at baseURL.
func NewContacts(baseURL, secret string) *Contacts {
	return &Contacts{c: svcclient.New("contacts", baseURL, secret)}
}

// Deals implements leads.Deals.
type Deals struct{ c *svcclient.Client }

// NewDeals calls the deals service at baseURL.
func NewDeals(baseURL, secret string) *Deals {
	return &Deals{c: svcclient.New("deals", baseURL, secret)}
}

var (
	_ leads.Contacts = (*Contacts)(nil)
	_ leads.Deals    = (*Deals)(nil)
)

func create(ctx context.Context, c *svcclient.Client, path, key string, body json.RawMessage) (int64, error) {
	var out created
	if err := c.Do(ctx, http.MethodPost, path, key, body, &out); err != nil {
		return 0, err
	}
	if out.Data.ID <= 0 {
		return 0, fmt.Errorf("%s%s answered without an id: %w", c.Name, path, problem.BadGateway(c.Name+" failed"))
	}
	return out.Data.ID, nil
}

// CreateContact is POST /internal/contacts.
func (x *Contacts) CreateContact(ctx context.Context, key string, body json.RawMessage) (int64, error) {
	return create(ctx, x.c, "/internal/contacts", key, body)
}

// CreateCompany is POST /internal/companies.
func (x *Contacts) CreateCompany(ctx context.Context, key string, body json.RawMessage) (int64, error) {
	return create(ctx, x.c, "/internal/companies", key, body)
}

// ContactExists is GET /internal/contacts/{id}.
func (x *Contacts) ContactExists(ctx context.Context, id int64) error {
	return x.c.Do(ctx, http.MethodGet, fmt.Sprintf("/internal/contacts/%d", id), "", nil, nil)
}

// CompanyExists is GET /internal/companies/{id}.
func (x *Contacts) CompanyExists(ctx context.Context, id int64) error {
	return x.c.Do(ctx, http.MethodGet, fmt.Sprintf("/internal/companies/%d", id), "", nil, nil)
}

// MatchCompanies is GET /internal/companies/match?name=&limit=.
func (x *Contacts) MatchCompanies(ctx context.Context, name string) ([]json.RawMessage, error) {
	var out list
	q := url.Values{"name": {name}, "limit": {fmt.Sprint(MatchLimit)}}
	err := x.c.Do(ctx, http.MethodGet, "/internal/companies/match?"+q.Encode(), "", nil, &out)
	return out.Data, err
}

// MatchContacts is GET /internal/contacts/match?email=.
func (x *Contacts) MatchContacts(ctx context.Context, email string) ([]json.RawMessage, error) {
	var out list
	q := url.Values{"email": {email}}
	err := x.c.Do(ctx, http.MethodGet, "/internal/contacts/match?"+q.Encode(), "", nil, &out)
	return out.Data, err
}

// CreateDeal is POST /internal/deals.
func (x *Deals) CreateDeal(ctx context.Context, key string, body json.RawMessage) (int64, error) {
	return create(ctx, x.c, "/internal/deals", key, body)
}
