package deals

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/opencrm/crm/pkg/fault"
)

// Contacts is what deals reads of the contacts context, each record
// decoded into out (*contactsapi.Client implements it; an id contacts
// does not know is contactsapi.ErrNotFound, contacts being down is the
// client's unavailable error).
type Contacts interface {
	Company(ctx context.Context, id int64, out any) error
	Contact(ctx context.Context, id int64, out any) error
}

// Company is what deals needs of a contacts company: its name for the
// denormalised company_name, its version (updated_at; nil when contacts
// sent none), and the raw record and its primary contact (JSON null when
// it has none) for merge tags.
type Company struct {
	Name           string
	UpdatedAt      *time.Time
	Raw            json.RawMessage
	PrimaryContact json.RawMessage
}

// company reads company id from contacts into deals' projection.
func (s *Service) company(ctx context.Context, id int64) (Company, error) {
	var raw json.RawMessage
	if err := s.contacts.Company(ctx, id, &raw); err != nil {
		return Company{}, err
	}
	return readCompany(id, raw)
}

// readCompany projects a contacts company record. The record is kept
// whole for merge tags; only its name must be readable.
func readCompany(id int64, raw json.RawMessage) (Company, error) {
	var head struct {
		Name           string          `json:"name"`
		UpdatedAt      json.RawMessage `json:"updated_at"`
		PrimaryContact json.RawMessage `json:"primary_contact"`
	}
	if err := json.Unmarshal(raw, &head); err != nil {
		return Company{}, fmt.Errorf("contacts: company %d: %v: %w", id, err,
			fault.New(fault.KindBadUpstream, "upstream_unavailable", "contacts answered with an unreadable company"))
	}
	pc := head.PrimaryContact
	if len(pc) == 0 {
		pc = json.RawMessage("null")
	}
	return Company{Name: head.Name, UpdatedAt: version(head.UpdatedAt), Raw: raw, PrimaryContact: pc}, nil
}

// version reads an RFC 3339 updated_at; anything else is no version (the
// name is still usable, it just cannot be ordered against events).
func version(raw json.RawMessage) *time.Time {
	var t time.Time
	if len(raw) == 0 || json.Unmarshal(raw, &t) != nil || t.IsZero() {
		return nil
	}
	return &t
}

// contact reads contact id's record from contacts, kept whole for merge tags.
func (s *Service) contact(ctx context.Context, id int64) (json.RawMessage, error) {
	var raw json.RawMessage
	if err := s.contacts.Contact(ctx, id, &raw); err != nil {
		return nil, err
	}
	return raw, nil
}
