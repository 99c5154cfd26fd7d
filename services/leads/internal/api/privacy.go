package api

import (
	"net/http"

	"github.com/opencrm/crm/pkg/contract/privacyapi"
	"github.com/opencrm/crm/pkg/db"
	"github.com/opencrm/crm/pkg/privacy/privacyhttp"
	"github.com/opencrm/crm/services/leads/internal/leads"
)

// mountPrivacy serves the leads context's part of a person's privacy
// requests behind internal: POST /internal/privacy/export (the person's
// leads, their notes, tasks and history; 200 {"data":ExportPart}) and
// POST /internal/privacy/erasures/{id} (deletes them, redacts their
// history, once per erasure id; 200 {"data":ErasePart}). A subject
// without an email is 422.
func mountPrivacy(mux *http.ServeMux, internal func(http.Handler) http.Handler, d *db.DB, svc *leads.Service) error {
	part, err := svc.Privacy()
	if err != nil {
		return err
	}
	privacyhttp.Mount(mux, internal, d, privacyapi.Leads, part)
	return nil
}
