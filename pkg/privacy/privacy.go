// Package privacy serves a context's part of the privacy requests
// (pkg/contract/privacyapi): POST /internal/privacy/export and POST
// /internal/privacy/erasures/{id}. The context supplies what it holds
// (Part); this package decodes the subject, records the erasure's changes
// as via erasure in history, and runs each erasure once: its part is
// stored under privacyapi.ErasureKey in the transaction of its effects,
// and a repeated call answers the stored part.
package privacy

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/opencrm/crm/pkg/contract/historyapi"
	"github.com/opencrm/crm/pkg/contract/privacyapi"
	"github.com/opencrm/crm/pkg/db"
	"github.com/opencrm/crm/pkg/fault"
	"github.com/opencrm/crm/pkg/history"
	"github.com/opencrm/crm/pkg/httpx"
	"github.com/opencrm/crm/pkg/idempotency"
	"github.com/opencrm/crm/pkg/validate"
)

// Part is what a context holds of a person. Export reads it; Erase
// deletes or redacts it inside tx (the transaction that stores the
// answer) and answers the receipt (Context and Status are filled in
// here) and the ids the later phases need.
type Part interface {
	Export(ctx context.Context, s privacyapi.Subject) (privacyapi.ExportPart, error)
	Erase(ctx context.Context, tx pgx.Tx, s privacyapi.Subject) (privacyapi.ErasePart, error)
}

// maxIDs bounds each id list of a subject: one person's records.
const maxIDs = 10000

// Mount serves the context's part on mux behind internal (the internal
// secret guard). The context's schema must hold idempotency.Migrations.
func Mount(mux *http.ServeMux, internal func(http.Handler) http.Handler, d *db.DB, context string, p Part) {
	mux.Handle(privacyapi.RouteExport, internal(httpx.HandlerFunc(func(w http.ResponseWriter, r *http.Request) error {
		s, err := subject(w, r)
		if err != nil {
			return err
		}
		part, err := p.Export(r.Context(), s)
		if err != nil {
			return err
		}
		httpx.JSON(w, http.StatusOK, answer[privacyapi.ExportPart]{Data: part})
		return nil
	})))
	mux.Handle(privacyapi.RouteErase, internal(httpx.HandlerFunc(func(w http.ResponseWriter, r *http.Request) error {
		id, err := httpx.PathID(r, "id")
		if err != nil {
			return err
		}
		s, err := subject(w, r)
		if err != nil {
			return err
		}
		part, err := Erase(r.Context(), d, context, id, s, p)
		if err != nil {
			return err
		}
		httpx.JSON(w, http.StatusOK, answer[privacyapi.ErasePart]{Data: part})
		return nil
	})))
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

type answer[T any] struct {
	Data T `json:"data"`
}

// subject decodes and checks the body: an address (kept as sent, matched
// case-insensitively by the contexts) and bounded id lists.
func subject(w http.ResponseWriter, r *http.Request) (privacyapi.Subject, error) {
	var s privacyapi.Subject
	if err := httpx.Decode(w, r, &s, 0); err != nil {
		return s, err
	}
	s.Email = strings.TrimSpace(s.Email)
	var v validate.Errors
	if v.Required("email", s.Email) {
		v.MaxLen("email", s.Email, validate.MaxString)
	}
	check := func(name string, ids []int64) {
		if len(ids) > maxIDs {
			v.Add(name, "must hold at most %d ids", maxIDs)
		}
		if slices.ContainsFunc(ids, func(id int64) bool { return id <= 0 }) {
			v.Add(name, "must hold positive ids")
		}
	}
	check("contact_ids", s.ContactIDs)
	check("lead_ids", s.LeadIDs)
	check("deal_ids", s.DealIDs)
	if err := v.Err(); err != nil {
		return s, err
	}
	return s, nil
}
