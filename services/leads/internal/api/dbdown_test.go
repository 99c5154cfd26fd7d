package api_test

import (
	"context"
	"net"
	"net/http"
	"testing"

	"github.com/opencrm/crm/pkg/contract/identityapi/identityapitest"
	"github.com/opencrm/crm/pkg/db"
	"github.com/opencrm/crm/pkg/directory"
)

// TestDatabaseDown: while PostgreSQL cannot be reached (nothing listens
// at the pool's address) a request answers 503 with the dependency
// problem and Retry-After, as the other contexts do, not 500: the
// service is not at fault and a retry later may work.
func TestDatabaseDown(t *testing.T) {
	t.Parallel()
	// A port nothing listens at: the listener is closed before the pool
	// dials it, so every connection attempt is refused.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	d, err := db.Open(context.Background(), "postgres://postgres@"+addr+"/crm?sslmode=disable&connect_timeout=2", "leads", 2)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Close)
	_, idc := identityapitest.NewFake(secret).Start(t)
	users, err := directory.NewUsers(d, idc)
	if err != nil {
		t.Fatal(err)
	}
	const nowhere = "http://127.0.0.1:1"
	h, _, iss := serve(t, d, users, nowhere, nowhere)
	e := &env{t: t, h: h}
	admin := iss.Admin(t, 2)
	lead := map[string]any{"first_name": "Ada", "last_name": "Lovelace"}
	for _, tc := range []struct {
		method, path string
		body         any
	}{
		{http.MethodGet, "/leads", nil},
		{http.MethodGet, "/leads?scope=team&q=ada", nil},
		{http.MethodGet, "/leads/1", nil},
		{http.MethodPost, "/leads", lead},
		{http.MethodPut, "/leads/1", lead},
		{http.MethodDelete, "/leads/1", nil},
		{http.MethodPost, "/leads/1/qualify", map[string]any{}},
		{http.MethodPut, "/leads/1/disqualify", map[string]any{}},
		{http.MethodGet, "/leads/export", nil},
		{http.MethodGet, "/leads/template", nil},
		{http.MethodGet, "/properties/leads", nil},
	} {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			r := e.do(tc.method, tc.path, admin, tc.body)
			wantExactProblem(t, r, map[string]any{"type": "/docs/problems#upstream_unavailable", "title": "Service Unavailable",
				"status": float64(http.StatusServiceUnavailable), "detail": "a dependency of the service is unavailable; retry later",
				"code": "upstream_unavailable"})
			if got := r.header.Get("Retry-After"); got != "1" {
				t.Errorf("Retry-After = %q, want 1", got)
			}
		})
	}
}
