package internalapi_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/opencrm/crm/pkg/contract/contactsapi"
	"github.com/opencrm/crm/pkg/contract/contactsapi/contactsapitest"
	"github.com/opencrm/crm/pkg/contract/dealsapi"
	"github.com/opencrm/crm/pkg/contract/dealsapi/dealsapitest"
	"github.com/opencrm/crm/pkg/contract/identityapi"
	"github.com/opencrm/crm/pkg/contract/identityapi/identityapitest"
	"github.com/opencrm/crm/pkg/contract/internalapi/internalapitest"
	"github.com/opencrm/crm/pkg/contract/leadsapi"
	"github.com/opencrm/crm/pkg/contract/leadsapi/leadsapitest"
	"github.com/opencrm/crm/pkg/contract/mergeapi"
	"github.com/opencrm/crm/pkg/contract/mergeapi/mergeapitest"
	"github.com/opencrm/crm/pkg/contract/privacyapi"
	"github.com/opencrm/crm/pkg/contract/privacyapi/privacyapitest"
	"github.com/opencrm/crm/pkg/contract/route"
)

const secret = "test-internal-secret-0123456789"

// TestFakesRouteTheDeclaredRoutes: each context's fake, what other
// contexts' tests call in its place, routes every route its contract
// package declares (a declared route the fake lacked would be one no
// consumer test could exercise): asked without the secret, none answers
// 404 or 405.
func TestFakesRouteTheDeclaredRoutes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		fake   http.Handler
		routes []route.Internal
	}{
		{"contacts", contactsapitest.NewFake(secret), contactsapi.InternalRoutes},
		{"deals", dealsapitest.NewFake(secret, dealsapitest.References{}), dealsapi.InternalRoutes},
		{"leads", leadsapitest.NewFake(secret), leadsapi.InternalRoutes},
		{"identity", identityapitest.NewFake(secret), identityapi.InternalRoutes},
		{"merge", mergeapitest.NewFake("deals", secret), route.Served("deals", mergeapi.InternalRoutes)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			for _, r := range tc.routes {
				req := httptest.NewRequest(r.Method, internalapitest.URL(r.Path), strings.NewReader("{}"))
				rec := httptest.NewRecorder()
				tc.fake.ServeHTTP(rec, req)
				if rec.Code == http.StatusNotFound || rec.Code == http.StatusMethodNotAllowed {
					t.Errorf("%s: the fake answers %d %s", r.Pattern(), rec.Code, rec.Body)
				}
			}
		})
	}
	t.Run("privacy", func(t *testing.T) {
		t.Parallel()
		f := privacyapitest.New(t, "mail", secret)
		for _, r := range route.Served("mail", privacyapi.InternalRoutes) {
			req, err := http.NewRequest(r.Method, f.URL+internalapitest.URL(r.Path), strings.NewReader("{}"))
			if err != nil {
				t.Fatal(err)
			}
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			_ = res.Body.Close()
			if res.StatusCode == http.StatusNotFound || res.StatusCode == http.StatusMethodNotAllowed {
				t.Errorf("%s: the fake answers %d", r.Pattern(), res.StatusCode)
			}
		}
	})
}
