package api

import (
	"net/http"

	"github.com/opencrm/crm/pkg/contract/privacyapi"
	"github.com/opencrm/crm/pkg/db"
	"github.com/opencrm/crm/pkg/privacy"
	"github.com/opencrm/crm/pkg/privacy/privacyhttp"
)

// Privacy is deals' part of a person's privacy requests (the store's):
// served on privacyapi's internal routes, its erasures run and are kept
// once each in DB.
type Privacy struct {
	DB   *db.DB
	Part privacy.Part
}

// mountPrivacy serves p behind internal; a Config without a part (a test
// of other routes) serves no privacy route.
func mountPrivacy(mux *http.ServeMux, internal func(http.Handler) http.Handler, p Privacy) {
	if p.Part == nil || p.DB == nil {
		return
	}
	privacyhttp.Mount(mux, internal, p.DB, privacyapi.Deals, p.Part)
}
