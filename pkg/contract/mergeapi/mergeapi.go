// Package mergeapi is the internal contract of a merge of contacts or
// companies (contacts owns the merge and its public routes): every
// context whose records point at a contact or a company moves those
// pointers from the merged records to the survivor when contacts asks.
//
// The move is idempotent by nature (a second call finds nothing left to
// move and answers zero), so contacts' saga can repeat a step whose answer
// it lost, and each record moves once.
package mergeapi

import (
	"context"
	"errors"
	"net/http"
	"strconv"

	"github.com/opencrm/crm/pkg/svcclient"
)

// Objects a merge joins.
const (
	Contact = "contact"
	Company = "company"
)

// MaxMerged bounds the records merged into one survivor.
const MaxMerged = 10

// The contexts that hold pointers to contacts or companies, and so serve
// RouteMove, in the order contacts' saga calls them.
var Movers = []string{"deals", "leads", "mail"}

// Paths of the internal API every context in Movers serves.
const (
	PathMerges = "/internal/merges"
	// RouteMove moves the pointers of merge {id}: 200 {"data":Moved}.
	RouteMove = "POST " + PathMerges + "/{id}"
)

// MovePath is the internal path of merge id.
func MovePath(id int64) string { return PathMerges + "/" + strconv.FormatInt(id, 10) }

// Move asks a context to point everything that pointed at one of Merged
// (contacts or companies, by Object) at Into instead. The context records
// the changes in history via merge.
type Move struct {
	Object string  `json:"object"`
	Into   int64   `json:"into"`
	Merged []int64 `json:"merged"`
	// Emails are the addresses (lower case, trimmed, distinct, ascending)
	// the merge's contacts had that the survivor no longer holds: the
	// merged contacts' own, and the survivor's former one when a merged
	// contact's address replaced it. Mail keeps them as the survivor's
	// aliases, so the survivor lists the messages of every address its
	// records had. Empty for companies, and from a contacts release that
	// predates the field (optional: movers that store no address ignore it).
	Emails []string `json:"emails,omitempty"`
}

// Moved counts the records a context repointed, by kind (e.g.
// {"deals":2} or {"email_links":3}).
type Moved map[string]int64

// Client calls one mover's internal API.
type Client struct{ c *svcclient.Client }

// New calls the context service at baseURL with the internal secret.
func New(service, baseURL, secret string) *Client {
	return &Client{c: svcclient.New(service, baseURL, secret)}
}

// NewClient calls a mover through c.
func NewClient(c *svcclient.Client) (*Client, error) {
	if c == nil {
		return nil, errors.New("mergeapi: needs a service client")
	}
	return &Client{c: c}, nil
}

// Move asks the context to move merge id's pointers.
func (c *Client) Move(ctx context.Context, id int64, m Move) (Moved, error) {
	var out struct {
		Data Moved `json:"data"`
	}
	if err := c.c.Do(ctx, http.MethodPost, MovePath(id), "", m, &out); err != nil {
		return nil, err
	}
	if out.Data == nil {
		out.Data = Moved{}
	}
	return out.Data, nil
}
