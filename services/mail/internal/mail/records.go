package mail

import (
	"context"
	"fmt"

	"github.com/opencrm/crm/pkg/fault"
)

// Contacts is the contacts context as mail reads it: a contact by id,
// decoded into the caller's projection (contactsapi.Client).
type Contacts interface {
	Contact(ctx context.Context, id int64, out any) error
}

// Leads is the leads context as mail reads it (leadsapi.Client).
type Leads interface {
	Lead(ctx context.Context, id int64, out any) error
}

// Kind names the record whose linked emails are listed.
type Kind string

// The records that carry linked emails.
const (
	KindContact Kind = "contact"
	KindLead    Kind = "lead"
)

// RecordRef names the contact or lead a message is read through.
type RecordRef struct {
	Kind Kind
	ID   int64
}

// withEmail is mail's projection of a contact or a lead: mail never reads
// the other contexts' records beyond it.
type withEmail struct {
	Email *string `json:"email"`
}

// recordEmail reads the email of the record ("" when it has none) from
// the context that owns it. That context's not_found is this API's
// not_found for the record; any other refusal means mail asked wrongly,
// so the record could not be read (bad upstream); unavailability and
// timeouts pass on as they are.
func (s *Service) recordEmail(ctx context.Context, r RecordRef) (string, error) {
	var out withEmail
	var err error
	if r.Kind == KindLead {
		err = s.leads.Lead(ctx, r.ID, &out)
	} else {
		err = s.contacts.Contact(ctx, r.ID, &out)
	}
	switch kind := fault.KindOf(err); {
	case err == nil:
	case kind == fault.KindNotFound:
		return "", fault.NotFound(string(r.Kind))
	case refusal(kind):
		// The provider's own words are logged, never answered: they
		// describe mail's request, not the caller's.
		return "", fmt.Errorf("%s lookup refused (%v): %w", r.Kind, err,
			fault.New(fault.KindBadUpstream, "upstream_unavailable", string(r.Kind)+" lookup failed"))
	default:
		return "", err
	}
	if out.Email == nil {
		return "", nil
	}
	return *out.Email, nil
}

// refusal reports whether a provider's error of kind k refuses the request
// (its 4xx) rather than failing to answer it.
func refusal(k fault.Kind) bool {
	switch k {
	case fault.KindInternal, fault.KindUnavailable, fault.KindTimeout, fault.KindBadUpstream:
		return false
	}
	return true
}
