package leadsapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/opencrm/crm/pkg/problem"
	"github.com/opencrm/crm/pkg/svcclient"
)

// Paths of the leads internal API.
const (
	PathLeads = "/internal/leads"
	PathBatch = PathLeads + "/batch"

	RouteCreateLead = "POST " + PathLeads
	RouteBatch      = "POST " + PathBatch
	RouteLead       = "GET " + PathLeads + "/{id}"
)

// LeadPath is one lead's path.
func LeadPath(id int64) string { return PathLeads + "/" + strconv.FormatInt(id, 10) }

// BatchItem is one lead of a batch: its own Idempotency-Key and the lead
// write body POST /internal/leads takes, already encoded.
type BatchItem struct {
	Key  string          `json:"key"`
	Lead json.RawMessage `json:"lead"`
}

// BatchRequest is the body of POST /internal/leads/batch.
type BatchRequest struct {
	Items []BatchItem `json:"items"`
	// IDOnly answers a created lead with its id alone, without the body a
	// single create would answer: for a caller that needs nothing else.
	IDOnly bool `json:"id_only,omitempty"`
}

// BatchResult is one item's answer: what POST /internal/leads would have
// answered for it (status and body), the lead's id when it is a 201, and
// whether it is a stored answer replayed. The batch answers
// {"data":[BatchResult...]} in item order.
type BatchResult struct {
	Status int `json:"status"`
	// ID is the created (or replayed) lead of a 201, so a caller needs not
	// unwrap Body for it; 0 from a leads older than this field.
	ID int64 `json:"id,omitempty"`
	// Body is absent for a 201 when the request asked for IDOnly.
	Body     json.RawMessage `json:"body,omitempty"`
	Replayed bool            `json:"replayed,omitempty"`
}

// NewLead is one lead for CreateLeads: the write body POST /internal/leads
// takes and its own Idempotency-Key. Encoded, it is a BatchItem.
type NewLead struct {
	Key  string    `json:"key"`
	Lead LeadInput `json:"lead"`
}

// CreatedLead is leads' answer for one NewLead: the lead's id, or Err, the
// refusal (a *problem.Error) a single create would have answered.
type CreatedLead struct {
	ID  int64
	Err error
}

// ErrNotFound is a lead id leads does not know (404).
var ErrNotFound = errors.New("leadsapi: not found")

// Client calls the leads internal API.
type Client struct{ c *svcclient.Client }

// New calls leads at baseURL with the internal secret.
func New(baseURL, secret string) *Client {
	return &Client{c: svcclient.New("leads", baseURL, secret)}
}

// NewClient calls leads through c.
func NewClient(c *svcclient.Client) (*Client, error) {
	if c == nil {
		return nil, errors.New("leadsapi: needs a service client")
	}
	return &Client{c: c}, nil
}

// CreatedID reads the lead id of a 201 item body.
func CreatedID(body json.RawMessage) (int64, error) {
	var c struct {
		Data struct {
			ID int64 `json:"id"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &c); err != nil || c.Data.ID <= 0 {
		return 0, fmt.Errorf("leads: answer without a lead id: %w", problem.BadGateway("leads answered without a lead id"))
	}
	return c.Data.ID, nil
}

// CreateBatch sends items in one call; each result is that item's answer,
// in order. Err is the answer's error when it is not a 201 (its problem,
// as a single call would have given it).
func (c *Client) CreateBatch(ctx context.Context, items []BatchItem) ([]BatchResult, []error, error) {
	var out struct {
		Data []BatchResult `json:"data"`
	}
	if err := c.c.Do(ctx, http.MethodPost, PathBatch, "", BatchRequest{Items: items}, &out); err != nil {
		return nil, nil, err
	}
	if len(out.Data) != len(items) {
		return nil, nil, fmt.Errorf("leads: %d answers for %d leads: %w", len(out.Data), len(items),
			problem.BadGateway("leads answered a batch with the wrong number of items"))
	}
	errs := make([]error, len(items))
	for i, a := range out.Data {
		if a.Status != http.StatusCreated {
			errs[i] = c.c.StatusError(a.Status, a.Body)
		}
	}
	return out.Data, errs, nil
}

// CreateLeads creates each lead once per key, in one call: the lead is
// encoded once, into the batch request, and a created lead is answered by
// its id alone (IDOnly), read as it comes. The error is for the call (leads unreachable, a malformed batch);
// a refusal of one lead is its CreatedLead's Err.
func (c *Client) CreateLeads(ctx context.Context, leads []NewLead) ([]CreatedLead, error) {
	var out struct {
		Data []BatchResult `json:"data"`
	}
	req := struct {
		Items  []NewLead `json:"items"`
		IDOnly bool      `json:"id_only"`
	}{leads, true}
	if err := c.c.Do(ctx, http.MethodPost, PathBatch, "", req, &out); err != nil {
		return nil, err
	}
	if len(out.Data) != len(leads) {
		return nil, fmt.Errorf("leads: %d answers for %d leads: %w", len(out.Data), len(leads),
			problem.BadGateway("leads answered a batch with the wrong number of items"))
	}
	res := make([]CreatedLead, len(leads))
	for i, a := range out.Data {
		switch {
		case a.Status != http.StatusCreated:
			res[i].Err = c.c.StatusError(a.Status, a.Body)
		case a.ID > 0:
			res[i].ID = a.ID
		default: // a leads that answers no id yet
			res[i].ID, res[i].Err = CreatedID(a.Body)
		}
	}
	return res, nil
}

// LeadExists reports whether lead id exists.
func (c *Client) LeadExists(ctx context.Context, id int64) (bool, error) {
	return c.c.Exists(ctx, LeadPath(id))
}

// Lead decodes lead id into out (the caller's own projection);
// ErrNotFound when leads does not know it.
func (c *Client) Lead(ctx context.Context, id int64, out any) error {
	var body struct {
		Data json.RawMessage `json:"data"`
	}
	err := c.c.Do(ctx, http.MethodGet, LeadPath(id), "", nil, &body)
	var p *problem.Error
	switch {
	case errors.As(err, &p) && p.Status == http.StatusNotFound:
		return fmt.Errorf("%w: %w", ErrNotFound, p)
	case err != nil:
		return err
	}
	if err := json.Unmarshal(body.Data, out); err != nil {
		return fmt.Errorf("leads: lead %d: %v: %w", id, err, problem.BadGateway("leads answered with an unreadable body"))
	}
	return nil
}
