package privacyapi

import (
	"context"
	"errors"
	"net/http"

	"github.com/opencrm/crm/pkg/svcclient"
)

// Client calls one context's internal privacy API.
type Client struct{ c *svcclient.Client }

// New calls the context service at baseURL with the internal secret.
func New(service, baseURL, secret string) *Client {
	return &Client{c: svcclient.New(service, baseURL, secret)}
}

// NewClient calls a context through c.
func NewClient(c *svcclient.Client) (*Client, error) {
	if c == nil {
		return nil, errors.New("privacyapi: needs a service client")
	}
	return &Client{c: c}, nil
}

// Export asks the context for what it holds about s.
func (c *Client) Export(ctx context.Context, s Subject) (ExportPart, error) {
	var out struct {
		Data ExportPart `json:"data"`
	}
	err := c.c.Do(ctx, http.MethodPost, PathExport, "", s, &out)
	return out.Data, err
}

// Erase asks the context to erase its part of s for erasure id; a
// repeated call answers the first one's part.
func (c *Client) Erase(ctx context.Context, id int64, s Subject) (ErasePart, error) {
	var out struct {
		Data ErasePart `json:"data"`
	}
	err := c.c.Do(ctx, http.MethodPost, ErasurePath(id), "", s, &out)
	return out.Data, err
}
