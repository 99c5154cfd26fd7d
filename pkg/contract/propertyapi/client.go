package propertyapi

import (
	"context"
	"net/http"

	"github.com/opencrm/crm/pkg/svcclient"
)

// PathInternal is the internal read of an object's definitions
// (GET /internal/properties/{object}); the gateway types the served
// OpenAPI document with it.
const PathInternal = "/internal/properties/"

// RouteInternal is the pattern of the internal read of object.
func RouteInternal(object string) string { return http.MethodGet + " " + PathInternal + object }

// Definitions is the internal read's answer.
type Definitions struct {
	Data []Property `json:"data"`
}

// Client reads definitions from the context that owns an object.
type Client struct{ c *svcclient.Client }

// NewClient wraps an internal-API client of the owning context.
func NewClient(c *svcclient.Client) *Client { return &Client{c: c} }

// List returns object's definitions by position, then name.
func (c *Client) List(ctx context.Context, object string) ([]Property, error) {
	var out Definitions
	err := c.c.Do(ctx, http.MethodGet, PathInternal+object, "", nil, &out)
	return out.Data, err
}
