package api

import (
	"errors"
	"net/http"

	"github.com/opencrm/crm/pkg/auth"
	"github.com/opencrm/crm/pkg/contract/privacyapi"
	"github.com/opencrm/crm/pkg/db"
	"github.com/opencrm/crm/pkg/history"
	"github.com/opencrm/crm/pkg/privacy"
	"github.com/opencrm/crm/pkg/privacy/privacyhttp"
)

// Privacy is intake's part of a person's privacy requests (the store's),
// served on privacyapi's internal routes behind InternalSecret; its
// erasures run and are kept once each in DB.
type Privacy struct {
	InternalSecret string
	DB             *db.DB
	Part           privacy.Part
}

// mountPrivacy serves p on mux; Deps without a part (tests of other
// routes) serve no privacy route.
func mountPrivacy(mux *http.ServeMux, p Privacy) error {
	if p.Part == nil {
		return nil
	}
	if p.DB == nil {
		return errors.New("api: privacy needs a database")
	}
	if err := auth.CheckInternalSecret(p.InternalSecret); err != nil {
		return errors.New("api: internal secret " + err.Error())
	}
	privacyhttp.Mount(mux, history.Internal(auth.RequireInternal(p.InternalSecret)), p.DB, privacyapi.Intake, p.Part)
	return nil
}
