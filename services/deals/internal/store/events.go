package store

import (
	"context"
	"encoding/json"
	"time"

	"github.com/opencrm/crm/pkg/outbox"
)

// Contacts event types this context follows.
const (
	companyCreated = "company.created"
	companyUpdated = "company.updated"
)

// ContactsEventTypes are the types HandleContactsEvent reads, for the
// consumer to skip the others undecoded (outbox.Consumer.Types): most of
// contacts' stream is contacts, a batch call a hundred of them.
var ContactsEventTypes = []string{companyCreated, companyUpdated}

// HandleContactsEvent is an outbox.Handler for crm:events:contacts: it keeps
// the company name stored on deals fresh, so lists never call contacts.
// The event's version is the company's updated_at (contacts publishes the
// full record); redelivered and reordered events are harmless, since an
// older version never replaces a newer one. An event without a version
// cannot be ordered and is ignored like any undecodable one.
func (s *Store) HandleContactsEvent(ctx context.Context, ev outbox.Event) error {
	if ev.Type != companyUpdated && ev.Type != companyCreated {
		return nil
	}
	var c struct {
		ID        int64      `json:"id"`
		Name      string     `json:"name"`
		UpdatedAt *time.Time `json:"updated_at"`
	}
	if err := json.Unmarshal(ev.Data, &c); err != nil || c.ID <= 0 || c.Name == "" || c.UpdatedAt == nil {
		return nil // undecodable: nothing a retry would fix
	}
	_, err := s.RefreshCompany(ctx, c.ID, c.Name, *c.UpdatedAt)
	return err
}
