// Package leadsapitest is the leads context's fake for other contexts'
// tests: lead lookups answered from memory. Run is the contract both the
// fake and leads' real handlers pass (leads' own tests run it), so the
// fake cannot drift from the service.
package leadsapitest

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"

	"github.com/opencrm/crm/pkg/auth"
	"github.com/opencrm/crm/pkg/contract/leadsapi"
	"github.com/opencrm/crm/pkg/httpx"
	"github.com/opencrm/crm/pkg/problem"
)

// Fake answers GET /internal/leads/{id} from memory.
type Fake struct {
	h     http.Handler
	mu    sync.Mutex
	leads map[int64]map[string]any
}

// NewFake answers callers presenting the internal secret.
func NewFake(secret string) *Fake {
	f := &Fake{leads: map[int64]map[string]any{}}
	mux := http.NewServeMux()
	mux.HandleFunc(leadsapi.RouteLead, f.lead)
	f.h = auth.RequireInternal(secret)(mux)
	return f
}

// Start serves f on a loopback listener closed when t ends.
func (f *Fake) Start(t testing.TB) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return srv
}

// AddLead stores a lead record (its "id" set to id).
func (f *Fake) AddLead(id int64, lead map[string]any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	rec := map[string]any{}
	for k, v := range lead {
		rec[k] = v
	}
	rec["id"] = id
	f.leads[id] = rec
}

// ServeHTTP implements leads' internal lookups behind the internal secret.
func (f *Fake) ServeHTTP(w http.ResponseWriter, r *http.Request) { f.h.ServeHTTP(w, r) }

func (f *Fake) lead(w http.ResponseWriter, r *http.Request) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	f.mu.Lock()
	rec, ok := f.leads[id]
	f.mu.Unlock()
	if err != nil || !ok {
		problem.Write(w, r, problem.NotFound("lead"))
		return
	}
	httpx.OK(w, rec)
}
