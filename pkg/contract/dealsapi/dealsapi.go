package dealsapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/shopspring/decimal"

	"github.com/opencrm/crm/pkg/problem"
	"github.com/opencrm/crm/pkg/svcclient"
)

// Paths of the deals internal API.
const (
	PathDeals  = "/internal/deals"
	PathStages = "/internal/stages"

	RouteStage      = "GET " + PathStages + "/{id}"
	RouteCreateDeal = "POST " + PathDeals
	RouteDeal       = "GET " + PathDeals + "/{id}"
	RouteMerge      = "GET " + PathDeals + "/{id}/merge"
)

// DealPath is one deal's path.
func DealPath(id int64) string { return PathDeals + "/" + strconv.FormatInt(id, 10) }

// MergePath is the path of a deal's merge data (deal, company, contact,
// quote) for contract templates.
func MergePath(id int64) string { return DealPath(id) + "/merge" }

// CreateDealRequest is what another context may send to POST
// /internal/deals (with an Idempotency-Key); null means unset. Value is a
// decimal string, never a float. CustomFields are checked as a public
// write's: an unknown name, a wrong type or a value the definition does
// not take is refused (422 naming custom_fields.<name>).
type CreateDealRequest struct {
	Title        string                     `json:"title"`
	Value        string                     `json:"value"`
	StageID      *int64                     `json:"stage_id"`
	CompanyID    *int64                     `json:"company_id"`
	ContactID    *int64                     `json:"contact_id"`
	AssignedTo   *int64                     `json:"assigned_to"`
	SourceLeadID int64                      `json:"source_lead_id"`
	CustomFields map[string]json.RawMessage `json:"custom_fields,omitempty" customFields:"deals"`
}

// Field names a deals refusal (422) can carry for CreateDealRequest.
const (
	FieldTitle        = "title"
	FieldValue        = "value"
	FieldStageID      = "stage_id"
	FieldCompanyID    = "company_id"
	FieldContactID    = "contact_id"
	FieldAssignedTo   = "assigned_to"
	FieldSourceLeadID = "source_lead_id"
)

// FieldCustom names a refusal of the custom field name
// (custom_fields.<name>).
func FieldCustom(name string) string { return "custom_fields." + name }

// ErrNotFound is a deal id deals does not know (404).
var ErrNotFound = errors.New("dealsapi: not found")

// Client calls the deals internal API.
type Client struct{ c *svcclient.Client }

// New calls deals at baseURL with the internal secret.
func New(baseURL, secret string) *Client {
	return &Client{c: svcclient.New("deals", baseURL, secret)}
}

// NewClient calls deals through c.
func NewClient(c *svcclient.Client) (*Client, error) {
	if c == nil {
		return nil, errors.New("dealsapi: needs a service client")
	}
	return &Client{c: c}, nil
}

type internalAnswer[T any] struct {
	Data T `json:"data"`
}

// CreateDeal creates a deal once per key: the same key and body answer
// the same deal, another body under the key is a 409.
func (c *Client) CreateDeal(ctx context.Context, key string, req CreateDealRequest) (int64, error) {
	b, err := json.Marshal(req)
	if err != nil {
		return 0, fmt.Errorf("dealsapi: encode: %w", err)
	}
	return c.SendDeal(ctx, key, b)
}

// SendDeal sends an encoded CreateDealRequest byte for byte: a saga
// resending the body it persisted before an answer was lost.
func (c *Client) SendDeal(ctx context.Context, key string, body json.RawMessage) (int64, error) {
	var out internalAnswer[struct {
		ID int64 `json:"id"`
	}]
	if err := c.c.Do(ctx, http.MethodPost, PathDeals, key, body, &out); err != nil {
		return 0, err
	}
	if out.Data.ID <= 0 {
		return 0, fmt.Errorf("deals answered without an id: %w", problem.BadGateway("deals failed"))
	}
	return out.Data.ID, nil
}

// StagePath is one pipeline stage's path.
func StagePath(id int64) string { return PathStages + "/" + strconv.FormatInt(id, 10) }

// ValuePlaces is the most decimal places a deal value may carry in the
// default currency; MaxValue bounds every value (exclusive). A caller
// checks its input against them before it starts a multi-step write.
const ValuePlaces = 2

// MaxValue is the exclusive upper bound of a deal value.
var MaxValue = decimal.New(1, 15)

// StageExists reports whether pipeline stage id exists.
func (c *Client) StageExists(ctx context.Context, id int64) (bool, error) {
	return c.c.Exists(ctx, StagePath(id))
}

// DealExists reports whether deal id exists.
func (c *Client) DealExists(ctx context.Context, id int64) (bool, error) {
	return c.c.Exists(ctx, DealPath(id))
}

// Merge decodes the merge data of deal id into out (the caller's own
// projection); ErrNotFound when deals does not know it.
func (c *Client) Merge(ctx context.Context, id int64, out any) error {
	var body internalAnswer[json.RawMessage]
	err := c.c.Do(ctx, http.MethodGet, MergePath(id), "", nil, &body)
	var p *problem.Error
	switch {
	case errors.As(err, &p) && p.Status == http.StatusNotFound:
		return fmt.Errorf("%w: %w", ErrNotFound, p)
	case err != nil:
		return err
	case len(body.Data) == 0 || string(body.Data) == "null":
		return fmt.Errorf("deals: merge answer without data: %w", problem.BadGateway("deals answered with an unreadable body"))
	}
	if err := json.Unmarshal(body.Data, out); err != nil {
		return fmt.Errorf("deals: merge data: %v: %w", err, problem.BadGateway("deals answered with an unreadable body"))
	}
	return nil
}
