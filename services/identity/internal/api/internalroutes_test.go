package api_test

import (
	"testing"

	"github.com/opencrm/crm/pkg/contract/identityapi"
	"github.com/opencrm/crm/pkg/contract/internalapi"
	"github.com/opencrm/crm/pkg/contract/internalapi/internalapitest"
	"github.com/opencrm/crm/pkg/contract/route"
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
	answer := func(r route.Internal, url string, body any) map[string]any {
		t.Helper()
		return internalapitest.Answer(t, e.h, internalSecret, r, url, body)
	}
	routes := map[string]route.Internal{}
	for _, r := range internalapi.Of(identityapi.Service) {
		routes[r.Pattern()] = r
	}
	var key envelope[keyOut]
	decode(t, e.do(req{method: "POST", path: "/api-keys", token: e.admin, body: `{"name":"Website","allowed_origins":["https://example.com"]}`}), 201, &key)
	token := e.createToken(`{"name":"billing sync","scopes":["deals:write"]}`)
	answer(routes[identityapi.RouteUsers], identityapi.PathUsers, nil)
	answer(routes[identityapi.RouteUser], identityapi.UserPath(e.adminID), nil)
	answer(routes[identityapi.RouteVerifyKey], identityapi.PathVerifyKey, identityapi.VerifyKeyRequest{Key: key.Data.Key})
	answer(routes[identityapi.RouteVerifyAccessToken], identityapi.PathVerifyAccessToken, identityapi.VerifyAccessTokenRequest{Token: token.Token})
	if len(routes) != 4 {
		t.Errorf("%d internal routes declared for identity, this test calls 4: call the new ones", len(routes))
	}
}
