// Package privacy is the core of a context's part of the privacy requests
// (pkg/contract/privacyapi), which privacyhttp serves. The context
// supplies what it holds (Part, or Person for records found by the
// person's address); Erase records the erasure's changes as via erasure
// in history and runs each erasure once: its part is stored under
// privacyapi.ErasureKey in the transaction of its effects, and a repeated
// call answers the stored part. Records is the store logic the contexts
// whose records carry notes, tasks and custom fields share.
package privacy

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/opencrm/crm/pkg/contract/historyapi"
	"github.com/opencrm/crm/pkg/contract/privacyapi"
	"github.com/opencrm/crm/pkg/db"
	"github.com/opencrm/crm/pkg/fault"
	"github.com/opencrm/crm/pkg/history"
	"github.com/opencrm/crm/pkg/idempotency"
)

// Part is what a context holds of a person. Export reads it; Erase
// deletes or redacts it inside tx (the transaction that stores the
// answer) and answers the receipt (Context and Status are filled in
// here) and the ids the later phases need.
type Part interface {
	Export(ctx context.Context, s privacyapi.Subject) (privacyapi.ExportPart, error)
	Erase(ctx context.Context, tx pgx.Tx, s privacyapi.Subject) (privacyapi.ErasePart, error)
}

// Erase runs p's erasure id for s once: a repeated call answers the
// first one's part without touching anything. Its changes are recorded
// in history via erasure.
func Erase(ctx context.Context, d *db.DB, context string, id int64, s privacyapi.Subject, p Part) (privacyapi.ErasePart, error) {
	ctx = history.WithVia(ctx, historyapi.ViaErasure)
	// The call is fingerprinted by the ids alone: a hash of the address
	// stored beside the answer would be the person's data kept by a
	// hash anyone can recompute from a guess. Identity asks one erasure
	// id for one address only.
	fingerprint := privacyapi.Found{ContactIDs: s.ContactIDs, LeadIDs: s.LeadIDs, DealIDs: s.DealIDs}
	done, err := idempotency.Once(ctx, d, privacyapi.ErasureKey(id), fingerprint, func(tx pgx.Tx) (privacyapi.ErasePart, error) {
		part, err := p.Erase(ctx, tx, s)
		if err != nil {
			return privacyapi.ErasePart{}, err
		}
		part.Receipt = complete(context, part.Receipt)
		return part, nil
	})
	if errors.Is(err, idempotency.ErrKeyReused) {
		return privacyapi.ErasePart{}, ErrErasureReused
	}
	if err != nil {
		return privacyapi.ErasePart{}, err
	}
	return done.Value, nil
}

// ErrErasureReused is the 409 for an erasure id asked again about other
// records than the first time: identity asks one erasure about one
// person, so that is a caller's bug, never a retry.
var ErrErasureReused = fault.Conflict("erasure_reused", "this erasure was asked about other records before")

// complete fills in a receipt's context and status, and empty maps and
// lists where the context left them out (the wire has no nulls there).
func complete(context string, r privacyapi.Receipt) privacyapi.Receipt {
	r.Context, r.Status = context, privacyapi.StatusCompleted
	if r.Erased == nil {
		r.Erased = map[string]int64{}
	}
	if r.Redacted == nil {
		r.Redacted = map[string]int64{}
	}
	if r.Kept == nil {
		r.Kept = []privacyapi.Kept{}
	}
	return r
}
