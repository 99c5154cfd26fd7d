// Package leadsapitest is the leads context's fake for other contexts'
// tests: lead lookups answered from memory. Run is the contract both the
// fake and leads' real handlers pass (leads' own tests run it), so the
// fake cannot drift from the service.
package leadsapitest

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/opencrm/crm/pkg/auth"
	"github.com/opencrm/crm/pkg/contract/internal/fakeidem"
	"github.com/opencrm/crm/pkg/contract/leadsapi"
	"github.com/opencrm/crm/pkg/history"
	"github.com/opencrm/crm/pkg/httpx"
	"github.com/opencrm/crm/pkg/problem"
	"github.com/opencrm/crm/pkg/validate"
)

// Fake answers lead lookups and batch creates from memory.
type Fake struct {
	h     http.Handler
	idem  fakeidem.Store
	mu    sync.Mutex
	leads map[int64]map[string]any
	order []int64 // created by batch, in order
	keys  []string
	// callers are the leads' creating requests' callers, by lead.
	callers map[int64]Caller
	next    int64
	// contacts are the contacts' addresses (lower-cased) the duplicate
	// lookup finds, as contacts would answer them.
	contacts map[string]int64
	// duplicatesDown makes the duplicate lookup answer 503.
	duplicatesDown bool
}

// Caller is who a create's request said it acted for: its X-Crm-Actor and
// X-Crm-Via headers (pkg/history) as sent, empty when absent.
type Caller struct{ Actor, Via string }

// NewFake answers callers presenting the internal secret.
func NewFake(secret string) *Fake {
	f := &Fake{leads: map[int64]map[string]any{}, callers: map[int64]Caller{}, next: 1000}
	mux := http.NewServeMux()
	mux.HandleFunc(leadsapi.RouteLead, f.lead)
	mux.HandleFunc(leadsapi.RouteBatch, f.batch)
	mux.HandleFunc(leadsapi.RouteDuplicates, f.duplicates)
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

// RemoveLead deletes a lead, as DELETE /leads/{id} does.
func (f *Fake) RemoveLead(id int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.leads, id)
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

// maxBatch is leads' batch bound.
const maxBatch = 50

// batch answers each item as POST /internal/leads would: first_name and
// last_name required, one lead per Idempotency-Key.
func (f *Fake) batch(w http.ResponseWriter, r *http.Request) {
	var in leadsapi.BatchRequest
	if err := httpx.Decode(w, r, &in, 4<<20); err != nil {
		problem.Write(w, r, err)
		return
	}
	if len(in.Items) == 0 || len(in.Items) > maxBatch {
		problem.Write(w, r, problem.Invalid("items", "must hold 1 to 50 leads"))
		return
	}
	out := make([]leadsapi.BatchResult, len(in.Items))
	for i, it := range in.Items {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodPost, leadsapi.PathLeads, nil).WithContext(r.Context())
		req.Header.Set("Idempotency-Key", it.Key)
		for _, h := range []string{history.ActorHeader, history.ViaHeader} {
			req.Header.Set(h, r.Header.Get(h))
		}
		f.createOne(rec, req, it.Key, it.Lead)
		out[i] = leadsapi.BatchResult{Status: rec.Code, Body: rec.Body.Bytes(), Replayed: rec.Header().Get("Idempotent-Replayed") == "true"}
		if rec.Code == http.StatusCreated {
			out[i].ID, _ = leadsapi.CreatedID(rec.Body.Bytes())
			if in.IDOnly {
				out[i].Body = nil
			}
		}
	}
	httpx.OK(w, out)
}

func (f *Fake) createOne(w http.ResponseWriter, r *http.Request, key string, raw []byte) {
	var lead map[string]any
	if err := json.Unmarshal(raw, &lead); err != nil || lead == nil {
		problem.Write(w, r, problem.MalformedJSON("body must be a JSON object"))
		return
	}
	var v validate.Errors
	for _, field := range []string{"first_name", "last_name"} {
		s, _ := lead[field].(string)
		lead[field] = strings.TrimSpace(s)
		v.Required(field, strings.TrimSpace(s))
	}
	if err := v.Err(); err != nil {
		problem.Write(w, r, err)
		return
	}
	f.idem.Run(w, r, leadsapi.PathLeads, raw, func() (int, any, error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.next++
		lead["id"] = f.next
		f.leads[f.next] = lead
		f.order = append(f.order, f.next)
		f.keys = append(f.keys, key)
		f.callers[f.next] = Caller{Actor: r.Header.Get(history.ActorHeader), Via: r.Header.Get(history.ViaHeader)}
		return http.StatusCreated, map[string]any{"success": true, "data": lead, "message": "Lead created"}, nil
	})
}

// CreatedBy is the caller of the batch request that created lead id; a
// replay leaves it as the first request set it.
func (f *Fake) CreatedBy(id int64) Caller {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.callers[id]
}

// Created returns the leads created through the batch route, in order,
// with the Idempotency-Key each was created under.
func (f *Fake) Created() (leads []map[string]any, keys []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, id := range f.order {
		leads = append(leads, f.leads[id])
	}
	return leads, append([]string(nil), f.keys...)
}
