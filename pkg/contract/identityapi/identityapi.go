package identityapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/opencrm/crm/pkg/problem"
	"github.com/opencrm/crm/pkg/svcclient"
)

// Paths of identity's internal API. The Route* values are the patterns
// identity's router registers, so client and server cannot disagree.
const (
	PathUsers     = "/internal/users"
	PathVerifyKey = "/internal/api-keys/verify"
	// PathVerifyAccessToken exchanges an integration token for a
	// short-lived access token of its service user.
	PathVerifyAccessToken = "/internal/access-tokens/verify"

	RouteUsers             = "GET " + PathUsers
	RouteUser              = "GET " + PathUsers + "/{id}"
	RouteVerifyKey         = "POST " + PathVerifyKey
	RouteVerifyAccessToken = "POST " + PathVerifyAccessToken
)

// UserPath is the path of one user's directory entry.
func UserPath(id int64) string { return PathUsers + "/" + strconv.FormatInt(id, 10) }

// DirectoryUser is what other contexts know of a user: the data of every
// user.* event, of the snapshot (GET /internal/users) and of one user's
// lookup (GET /internal/users/{id}).
type DirectoryUser struct {
	ID     int64  `json:"id"`
	Name   string `json:"name"`
	Email  string `json:"email"`
	Role   string `json:"role"`
	TeamID *int64 `json:"team_id"`
	Active bool   `json:"active"`
	// EditScope is company, team or own; empty (an event of an older
	// identity) is the default, company.
	EditScope string    `json:"edit_scope,omitempty"`
	UpdatedAt time.Time `json:"updated_at"`
}

// VerifyKeyRequest is the body of POST /internal/api-keys/verify.
type VerifyKeyRequest struct {
	Key string `json:"key"`
}

// VerifiedKey is identity's answer for an active API key.
type VerifiedKey struct {
	ID                 int64    `json:"id"`
	Name               string   `json:"name"`
	Prefix             string   `json:"prefix"`
	RateLimitPerMinute int      `json:"rate_limit_per_minute"`
	AllowedOrigins     []string `json:"allowed_origins"`
}

var (
	// ErrUnknownKey is an API key identity does not know, or has revoked
	// (it answers 401). Each edge renders its own 401 for it.
	ErrUnknownKey = errors.New("identityapi: unknown or revoked API key")
	// ErrUserNotFound is a user id identity does not know (404).
	ErrUserNotFound = errors.New("identityapi: no such user")
)

// Client calls identity's internal API.
type Client struct{ c *svcclient.Client }

// NewClient calls identity through c (base URL, internal secret, timeout).
func NewClient(c *svcclient.Client) (*Client, error) {
	if c == nil {
		return nil, errors.New("identityapi: needs a service client")
	}
	return &Client{c: c}, nil
}

// New calls identity at baseURL with the internal secret.
func New(baseURL, secret string) *Client {
	return &Client{c: svcclient.New("identity", baseURL, secret)}
}

type internalAnswer[T any] struct {
	Data T `json:"data"`
}

// Users is the snapshot of every user (GET /internal/users).
func (c *Client) Users(ctx context.Context) ([]DirectoryUser, error) {
	var out internalAnswer[[]DirectoryUser]
	if err := c.c.Do(ctx, http.MethodGet, PathUsers, "", nil, &out); err != nil {
		return nil, err
	}
	return out.Data, nil
}

// User is one user's directory entry (GET /internal/users/{id});
// ErrUserNotFound when identity does not know id.
func (c *Client) User(ctx context.Context, id int64) (DirectoryUser, error) {
	var out internalAnswer[DirectoryUser]
	err := c.c.Do(ctx, http.MethodGet, UserPath(id), "", nil, &out)
	var p *problem.Error
	switch {
	case errors.As(err, &p) && p.Status == http.StatusNotFound:
		return DirectoryUser{}, fmt.Errorf("user %d: %w", id, ErrUserNotFound)
	case err != nil:
		return DirectoryUser{}, err
	case out.Data.ID != id:
		return DirectoryUser{}, fmt.Errorf("identity answered user %d for %d: %w", out.Data.ID, id, problem.BadGateway("identity failed"))
	}
	return out.Data, nil
}

// VerifyKey asks identity about an API key secret, uncached: ErrUnknownKey
// for an unknown or revoked key, a problem error (503, 504, 502) when
// identity cannot answer. Edges use KeyVerifier, which caches.
func (c *Client) VerifyKey(ctx context.Context, secret string) (VerifiedKey, error) {
	var out internalAnswer[VerifiedKey]
	err := c.c.Do(ctx, http.MethodPost, PathVerifyKey, "", VerifyKeyRequest{Key: secret}, &out)
	var p *problem.Error
	var st *svcclient.StatusErr
	switch {
	case errors.As(err, &st) && st.Status == http.StatusUnauthorized,
		errors.As(err, &p) && (p.Status == http.StatusNotFound || p.Status == http.StatusUnprocessableEntity):
		return VerifiedKey{}, ErrUnknownKey
	case err != nil:
		return VerifiedKey{}, err
	case out.Data.ID <= 0:
		return VerifiedKey{}, fmt.Errorf("identity: verify answer without an id: %w", problem.BadGateway("identity answered with an unreadable body"))
	}
	if out.Data.AllowedOrigins == nil {
		out.Data.AllowedOrigins = []string{}
	}
	return out.Data, nil
}
