package intake

import (
	"context"
	"time"

	"github.com/opencrm/crm/pkg/contract/leadsapi"
)

// duplicateTimeout bounds the duplicate lookup: it runs beside the
// submission's own forwarding, so it never delays an answer by more.
const duplicateTimeout = 2 * time.Second

// LookupDuplicate starts asking leads which record email already belongs
// to (a contact, else a lead) and answers on the channel once: the
// record, or nil when there is none or the lookup failed. It is best
// effort: a failure is logged and never fails the submission.
func (s *Service) LookupDuplicate(ctx context.Context, email string) <-chan *leadsapi.DuplicateOf {
	out := make(chan *leadsapi.DuplicateOf, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), min(duplicateTimeout, s.cfg.ForwardTimeout))
		defer cancel()
		d, err := s.leads.DuplicateOf(ctx, email)
		if err != nil {
			s.log.WarnContext(ctx, "duplicate lookup failed; answered without duplicate_of", "error", err.Error())
			d = nil
		}
		out <- d
	}()
	return out
}

// DuplicateOf is what a submission's answer names as the record it
// repeats: what the lookup (LookupDuplicate's channel) found, unless that
// is the submission's own lead. Its own lead is the only lead with the
// address when the lookup saw it: created meanwhile (r's lead), or, for a
// waiting submission (a 202, or its replay), delivered since.
func (s *Service) DuplicateOf(ctx context.Context, lookup <-chan *leadsapi.DuplicateOf, r Receipt) *leadsapi.DuplicateOf {
	found := <-lookup
	if found == nil || found.LeadID == 0 {
		return found
	}
	own := r.LeadID
	if r.QueuedID != 0 {
		sub, err := s.store.Get(ctx, r.QueuedID)
		if err != nil {
			s.log.WarnContext(ctx, "duplicate lookup: read submission; answered without duplicate_of", "submission_id", r.QueuedID, "error", err.Error())
			return nil
		}
		if sub.LeadID != nil {
			own = *sub.LeadID
		}
	}
	if found.LeadID == own {
		return nil
	}
	return found
}
