package api

import (
	"net/http"

	"github.com/opencrm/crm/pkg/httpx"
)

// duplicates is leadsapi.RouteDuplicates (internal): the contact, else
// the lead, an address already belongs to; {"data": null} for none.
func (h *handlers) duplicates(w http.ResponseWriter, r *http.Request) error {
	found, err := h.svc.DuplicateOf(r.Context(), r.URL.Query().Get("email"))
	if err != nil {
		return err
	}
	httpx.JSON(w, http.StatusOK, map[string]any{"data": found})
	return nil
}
