// Package privacyhttp serves a context's part of the privacy requests on
// its internal routes, POST /internal/privacy/export and POST
// /internal/privacy/erasures/{id}: it decodes and checks the subject and
// hands it to the core, pkg/privacy.
package privacyhttp

import (
	"net/http"
	"slices"
	"strings"

	"github.com/opencrm/crm/pkg/contract/privacyapi"
	"github.com/opencrm/crm/pkg/db"
	"github.com/opencrm/crm/pkg/httpx"
	"github.com/opencrm/crm/pkg/privacy"
	"github.com/opencrm/crm/pkg/validate"
)

// maxIDs bounds each id list of a subject: one person's records.
const maxIDs = 10000

// Mount serves the context's part on mux behind internal (the internal
// secret guard). The context's schema must hold idempotency.Migrations.
func Mount(mux *http.ServeMux, internal func(http.Handler) http.Handler, d *db.DB, context string, p privacy.Part) {
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
		part, err := privacy.Erase(r.Context(), d, context, id, s, p)
		if err != nil {
			return err
		}
		httpx.JSON(w, http.StatusOK, answer[privacyapi.ErasePart]{Data: part})
		return nil
	})))
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
