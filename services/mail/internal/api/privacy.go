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

// Privacy is what serves the mail context's part of a person's export and
// erasure (privacyapi): the messages they took part in (the store), the
// database each erasure's part is stored in once, and the internal secret
// guarding the routes.
type Privacy struct {
	Part           privacy.Part
	DB             *db.DB
	InternalSecret string
}

// mountPrivacy serves POST /internal/privacy/export and POST
// /internal/privacy/erasures/{id} behind the internal secret; nothing
// when p is nil.
func mountPrivacy(mux *http.ServeMux, p *Privacy) error {
	if p == nil {
		return nil
	}
	if p.Part == nil || p.DB == nil {
		return errors.New("api: privacy needs its part and the database")
	}
	privacyhttp.Mount(mux, history.Internal(auth.RequireInternal(p.InternalSecret)), p.DB, privacyapi.Mail, p.Part)
	return nil
}
