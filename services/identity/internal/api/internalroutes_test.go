package api_test

import (
	"testing"

	"github.com/opencrm/crm/pkg/contract/identityapi"
	"github.com/opencrm/crm/pkg/contract/internalapi/internalapitest"
)

// TestInternalRoutes: identity serves exactly the internal routes
// declared for it (identityapi.InternalRoutes), the API
// api/released/internal/identity.json freezes; its code spells no
// internal path of its own.
func TestInternalRoutes(t *testing.T) {
	t.Parallel()
	internalapitest.Check(t, newEnv(t, options{}).h, identityapi.Service)
	internalapitest.CheckSources(t, "../..")
}

// TestInternalAnswers: each internal route identity serves answers with
// the shape its declaration (hence its released document) gives.
func TestInternalAnswers(t *testing.T) {
	t.Parallel()
	e := newEnv(t, options{})
	c := internalapitest.Calls(t, e.h, internalSecret, identityapi.Service)
	var key envelope[keyOut]
	decode(t, e.do(req{method: "POST", path: "/api-keys", token: e.admin, body: `{"name":"Website","allowed_origins":["https://example.com"]}`}), 201, &key)
	token := e.createToken(`{"name":"billing sync","scopes":["deals:write"]}`)
	c.Call(identityapi.RouteUsers, identityapi.PathUsers, nil)
	c.Call(identityapi.RouteUser, identityapi.UserPath(e.adminID), nil)
	c.Call(identityapi.RouteVerifyKey, identityapi.PathVerifyKey, identityapi.VerifyKeyRequest{Key: key.Data.Key})
	c.Call(identityapi.RouteVerifyAccessToken, identityapi.PathVerifyAccessToken, identityapi.VerifyAccessTokenRequest{Token: token.Token})
}
