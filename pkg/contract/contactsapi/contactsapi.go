package contactsapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/opencrm/crm/pkg/problem"
	"github.com/opencrm/crm/pkg/svcclient"
)

// Paths of the contacts internal API.
const (
	PathContacts       = "/internal/contacts"
	PathCompanies      = "/internal/companies"
	PathMatchContacts  = PathContacts + "/match"
	PathMatchCompanies = PathCompanies + "/match"
	PathContactsByID   = PathContacts + "/by-id"

	RouteCreateContact  = "POST " + PathContacts
	RouteMatchContacts  = "GET " + PathMatchContacts
	RouteContact        = "GET " + PathContacts + "/{id}"
	RouteContactsByID   = "GET " + PathContactsByID
	RouteCreateCompany  = "POST " + PathCompanies
	RouteMatchCompanies = "GET " + PathMatchCompanies
	RouteCompany        = "GET " + PathCompanies + "/{id}"
)

// ContactPath is one contact's path.
func ContactPath(id int64) string { return PathContacts + "/" + strconv.FormatInt(id, 10) }

// CompanyPath is one company's path (the answer carries its primary contact).
func CompanyPath(id int64) string { return PathCompanies + "/" + strconv.FormatInt(id, 10) }

// CreateContactRequest is what another context may send to
// POST /internal/contacts (with an Idempotency-Key): a subset of the
// contact write fields, null meaning unset. CustomFields are checked as a
// public write's: an unknown name or a wrong type is refused (422 naming
// custom_fields.<name>).
type CreateContactRequest struct {
	FirstName    string                     `json:"first_name"`
	LastName     string                     `json:"last_name"`
	Email        *string                    `json:"email"`
	Phone        *string                    `json:"phone"`
	JobTitle     *string                    `json:"job_title"`
	CompanyID    *int64                     `json:"company_id"`
	Notes        *string                    `json:"notes"`
	Tags         *string                    `json:"tags"`
	Source       string                     `json:"source"`
	AssignedTo   *int64                     `json:"assigned_to"`
	CustomFields map[string]json.RawMessage `json:"custom_fields,omitempty" customFields:"contacts"`
}

// CreateCompanyRequest is the body of POST /internal/companies. Contacts
// decodes it as a public company write, so CustomFields are checked as
// CreateContactRequest's are against the companies' definitions (422
// naming custom_fields.<name>); without the member a caller could not set
// them on a company it creates.
type CreateCompanyRequest struct {
	Name         string                     `json:"name"`
	CustomFields map[string]json.RawMessage `json:"custom_fields,omitempty" customFields:"companies"`
}

// Field names a contacts refusal (422) can carry for these requests.
const (
	FieldCompanyName = "name"
	FieldFirstName   = "first_name"
	FieldLastName    = "last_name"
	FieldEmail       = "email"
	FieldCompanyID   = "company_id"
	FieldAssignedTo  = "assigned_to"
)

// CreatedRecord is the part of a 201 answer a creator needs.
type CreatedRecord struct {
	ID int64 `json:"id"`
}

// ErrNotFound is an id contacts does not know (404).
var ErrNotFound = errors.New("contactsapi: not found")

// MaxMatchLimit bounds GET /internal/companies/match's limit.
const MaxMatchLimit = 50

// Client calls the contacts internal API.
type Client struct{ c *svcclient.Client }

// New calls contacts at baseURL with the internal secret.
func New(baseURL, secret string) *Client {
	return &Client{c: svcclient.New("contacts", baseURL, secret)}
}

// NewClient calls contacts through c.
func NewClient(c *svcclient.Client) (*Client, error) {
	if c == nil {
		return nil, errors.New("contactsapi: needs a service client")
	}
	return &Client{c: c}, nil
}

type internalAnswer[T any] struct {
	Data T `json:"data"`
}

func (c *Client) create(ctx context.Context, path, key string, body json.RawMessage) (int64, error) {
	var out internalAnswer[CreatedRecord]
	if err := c.c.Do(ctx, http.MethodPost, path, key, body, &out); err != nil {
		return 0, err
	}
	if out.Data.ID <= 0 {
		return 0, fmt.Errorf("contacts%s answered without an id: %w", path, problem.BadGateway("contacts failed"))
	}
	return out.Data.ID, nil
}

// CreateContact creates a contact once per key: the same key and body
// answer the same contact, another body under the key is a 409.
func (c *Client) CreateContact(ctx context.Context, key string, req CreateContactRequest) (int64, error) {
	b, err := json.Marshal(req)
	if err != nil {
		return 0, fmt.Errorf("contactsapi: encode: %w", err)
	}
	return c.SendContact(ctx, key, b)
}

// SendContact sends an encoded CreateContactRequest byte for byte: a saga
// resending the body it persisted before an answer was lost.
func (c *Client) SendContact(ctx context.Context, key string, body json.RawMessage) (int64, error) {
	return c.create(ctx, PathContacts, key, body)
}

// CreateCompany creates a company once per key.
func (c *Client) CreateCompany(ctx context.Context, key string, req CreateCompanyRequest) (int64, error) {
	b, err := json.Marshal(req)
	if err != nil {
		return 0, fmt.Errorf("contactsapi: encode: %w", err)
	}
	return c.SendCompany(ctx, key, b)
}

// SendCompany sends an encoded CreateCompanyRequest byte for byte.
func (c *Client) SendCompany(ctx context.Context, key string, body json.RawMessage) (int64, error) {
	return c.create(ctx, PathCompanies, key, body)
}

// get decodes the answer's data into out; ErrNotFound (wrapping the 404
// problem) for an unknown id.
func (c *Client) get(ctx context.Context, path string, out any) error {
	var body internalAnswer[json.RawMessage]
	err := c.c.Do(ctx, http.MethodGet, path, "", nil, &body)
	var p *problem.Error
	switch {
	case errors.As(err, &p) && p.Status == http.StatusNotFound:
		return fmt.Errorf("%w: %w", ErrNotFound, p)
	case err != nil:
		return err
	case len(body.Data) == 0 || string(body.Data) == "null":
		return fmt.Errorf("contacts: empty answer for %s: %w", path, problem.BadGateway("contacts answered without data"))
	}
	if raw, ok := out.(*json.RawMessage); ok {
		*raw = body.Data
		return nil
	}
	if err := json.Unmarshal(body.Data, out); err != nil {
		return fmt.Errorf("contacts: %s: %v: %w", path, err, problem.BadGateway("contacts answered with an unreadable body"))
	}
	return nil
}

// Contact decodes contact id into out (a caller's own projection, or a
// *json.RawMessage); ErrNotFound when contacts does not know it.
func (c *Client) Contact(ctx context.Context, id int64, out any) error {
	return c.get(ctx, ContactPath(id), out)
}

// Company decodes company id, with its "primary_contact" (the earliest
// created contact, or null), into out; ErrNotFound when unknown.
func (c *Client) Company(ctx context.Context, id int64, out any) error {
	return c.get(ctx, CompanyPath(id), out)
}

// ContactExists reports whether contact id exists.
func (c *Client) ContactExists(ctx context.Context, id int64) (bool, error) {
	return c.c.Exists(ctx, ContactPath(id))
}

// CompanyExists reports whether company id exists.
func (c *Client) CompanyExists(ctx context.Context, id int64) (bool, error) {
	return c.c.Exists(ctx, CompanyPath(id))
}

// EventContactsImported is published on contacts' event stream instead of
// one contact.created per contact by a CSV import, once per
// MaxContactsByID contacts, and by a batch call that creates more than one
// contact; its data is an Imported. A consumer reads the records from the
// event when it carries them, else with ContactsByID.
const EventContactsImported = "contacts.imported"

// Imported is the data of a contacts.imported event: the ids of contacts
// one import or one batch call created, ascending, and the records when
// the event carries them.
type Imported struct {
	IDs []int64 `json:"ids"`
	// Records are the created contacts as the call that created them
	// answered, one per id in IDs' order: a batch call's event carries
	// them (the writer holds their JSON; a release before this field
	// ignores it and reads them back). A CSV import's event has none:
	// its writer never encodes the records, and its consumers read them
	// with ContactsByID.
	Records []Contact `json:"records,omitempty"`
}

// ImportedRaw is an Imported whose records stay as their JSON: how a
// consumer that passes each record on as it came (webhooks) reads the
// event without decoding the records, and how a writer holding their JSON
// writes it.
type ImportedRaw struct {
	IDs     []int64           `json:"ids"`
	Records []json.RawMessage `json:"records,omitempty"`
}

// Encoded is json.Marshal(r), byte for byte, when each record is
// json.Marshal's output (compact, HTML escaped), as a writer's are:
// json.Marshal would scan and copy every record again, a tenth of a batch
// call's service CPU.
func (r ImportedRaw) Encoded() []byte {
	size := 32 + 21*len(r.IDs)
	for _, rec := range r.Records {
		size += len(rec) + 1
	}
	buf := append(make([]byte, 0, size), `{"ids":`...)
	if r.IDs == nil {
		buf = append(buf, "null"...)
	} else {
		buf = append(buf, '[')
		for i, id := range r.IDs {
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = strconv.AppendInt(buf, id, 10)
		}
		buf = append(buf, ']')
	}
	if len(r.Records) > 0 {
		buf = append(buf, `,"records":[`...)
		for i, rec := range r.Records {
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = append(buf, rec...)
		}
		buf = append(buf, ']')
	}
	return append(buf, '}')
}

// Carried returns the records the event carries, one per id, or nil when
// it carries none (a CSV import's) or not one per id (a writer's error: a
// consumer reads those back with ContactsByID).
func (r ImportedRaw) Carried() []json.RawMessage {
	if len(r.Records) == 0 || len(r.Records) != len(r.IDs) {
		return nil
	}
	return r.Records
}

// MaxContactsByID is the most ids one ContactsByID call may name: as many
// as one contacts.imported event lists.
const MaxContactsByID = 1000

// ContactsByID returns the records of those of ids that exist, by
// ascending id (a deleted contact is simply absent): how a consumer of
// contacts.imported reads the imported records in one call per event.
func (c *Client) ContactsByID(ctx context.Context, ids []int64) ([]json.RawMessage, error) {
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = strconv.FormatInt(id, 10)
	}
	var out internalAnswer[[]json.RawMessage]
	err := c.c.Do(ctx, http.MethodGet, PathContactsByID+"?"+url.Values{"ids": {strings.Join(parts, ",")}}.Encode(), "", nil, &out)
	return out.Data, err
}

// ParseIDs reads the ids query parameter of ContactsByID: 1 to
// MaxContactsByID positive integers, comma-separated. ok is false when it
// is not that.
func ParseIDs(v string) (ids []int64, ok bool) {
	parts := strings.Split(v, ",")
	if v == "" || len(parts) > MaxContactsByID {
		return nil, false
	}
	ids = make([]int64, len(parts))
	for i, p := range parts {
		id, err := strconv.ParseInt(p, 10, 64)
		if err != nil || id < 1 {
			return nil, false
		}
		ids[i] = id
	}
	return ids, true
}

// MatchContacts lists the contacts whose email equals email ignoring case.
func (c *Client) MatchContacts(ctx context.Context, email string) ([]json.RawMessage, error) {
	var out internalAnswer[[]json.RawMessage]
	err := c.c.Do(ctx, http.MethodGet, PathMatchContacts+"?"+url.Values{"email": {email}}.Encode(), "", nil, &out)
	return out.Data, err
}

// MatchCompanies lists up to limit companies whose name resembles name,
// best first, each with a "score".
func (c *Client) MatchCompanies(ctx context.Context, name string, limit int) ([]json.RawMessage, error) {
	var out internalAnswer[[]json.RawMessage]
	q := url.Values{"name": {name}, "limit": {strconv.Itoa(limit)}}
	err := c.c.Do(ctx, http.MethodGet, PathMatchCompanies+"?"+q.Encode(), "", nil, &out)
	return out.Data, err
}
