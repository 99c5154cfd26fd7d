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

// Privacy is contracts' part of a person's privacy requests (the
// store's), served on privacyapi's internal routes behind InternalSecret;
// its erasures run and are kept once each in DB. The calls act for the
// actor identity names (the admin who asked), as every internal call.
type Privacy struct {
	InternalSecret string
	DB             *db.DB
	Part           privacy.Part
}

// mountPrivacy serves each of ps (New takes at most one; none in tests of
// other routes).
func mountPrivacy(mux *http.ServeMux, ps []Privacy) error {
	if len(ps) > 1 {
		return errors.New("api: one privacy part at most")
	}
	for _, p := range ps {
		if p.DB == nil || p.Part == nil {
			return errors.New("api: privacy needs a database and a part")
		}
		if err := auth.CheckInternalSecret(p.InternalSecret); err != nil {
			return errors.New("api: internal secret " + err.Error())
		}
		privacyhttp.Mount(mux, history.Internal(auth.RequireInternal(p.InternalSecret)), p.DB, privacyapi.Contracts, p.Part)
	}
	return nil
}
