package api_test

import (
	"testing"

	"github.com/opencrm/crm/pkg/contract/internalapi/internalapitest"
	"github.com/opencrm/crm/pkg/contract/mailapi"
	"github.com/opencrm/crm/pkg/contract/mergeapi"
	"github.com/opencrm/crm/pkg/contract/privacyapi"
)

// TestInternalRoutes: mail serves exactly the internal routes declared
// for it (the shared contracts' routes: a merge's move, privacy), the API
// api/released/internal/mail.json freezes; its code spells no internal
// path of its own.
func TestInternalRoutes(t *testing.T) {
	t.Parallel()
	internalapitest.Check(t, newPrivacyEnv(t).srv.Config.Handler, mailapi.Service)
	internalapitest.CheckSources(t, "../..")
}

// TestInternalAnswers: each internal route mail serves answers with the
// shape its declaration (hence its released document) gives.
func TestInternalAnswers(t *testing.T) {
	t.Parallel()
	h := newPrivacyEnv(t).srv.Config.Handler
	c := internalapitest.Calls(t, h, internalSecret, mailapi.Service)
	c.Call(mergeapi.RouteMove, mergeapi.MovePath(3), mergeapi.Move{Object: mergeapi.Contact, Into: 1, Merged: []int64{2}})
	subject := privacyapi.Subject{Email: "ada@engines.test", ContactIDs: []int64{2}, LeadIDs: []int64{3}, DealIDs: []int64{4}}
	c.Call(privacyapi.RouteExport, privacyapi.PathExport, subject)
	c.Call(privacyapi.RouteErase, privacyapi.ErasurePath(7), subject)
}
