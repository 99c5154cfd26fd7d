package api

import (
	"net/http"

	"github.com/opencrm/crm/pkg/auth"
	"github.com/opencrm/crm/pkg/contract/privacyapi"
	"github.com/opencrm/crm/pkg/history"
	"github.com/opencrm/crm/pkg/privacy/privacyhttp"
	"github.com/opencrm/crm/services/webhooks/internal/store"
)

// mountPrivacy serves the webhooks context's part of a person's export
// and erasure (privacyapi: the events of the feed about them and their
// deliveries, the store) on POST /internal/privacy/export and POST
// /internal/privacy/erasures/{id}, behind the internal secret (without
// one, every call is refused).
func mountPrivacy(mux *http.ServeMux, st *store.Store, secret string) {
	privacyhttp.Mount(mux, history.Internal(auth.RequireInternal(secret)), st.DB(), privacyapi.Webhooks, st)
}
