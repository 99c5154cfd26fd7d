// Package privacyapitest is a fake context's internal privacy API for the
// tests of whoever runs privacy requests (identity): an httptest server
// answering privacyapi.RouteExport and RouteErase with scripted parts, as
// pkg/privacy.Mount does (the internal secret, one erasure per id, the
// receipt's context and status filled in, a repeat with other ids
// refused), recording every call, and
// able to answer 503 as a context that is down.
package privacyapitest

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"

	"github.com/opencrm/crm/pkg/auth"
	"github.com/opencrm/crm/pkg/contract/historyapi"
	"github.com/opencrm/crm/pkg/contract/privacyapi"
	"github.com/opencrm/crm/pkg/history"
)

// Call is one request the fake received.
type Call struct {
	// Op is "export" or "erase".
	Op string
	// ErasureID is the erasure's id (erase only).
	ErasureID int64
	Subject   privacyapi.Subject
	// Actor and Via are what the X-Crm-Actor and X-Crm-Via headers named
	// (zero when absent).
	Actor historyapi.HistoryActor
	Via   string
	// Status is what the fake answered.
	Status int
}

// Ops of a Call.
const (
	OpExport = "export"
	OpErase  = "erase"
)

// Fake is one context's internal privacy API.
type Fake struct {
	// Name is the context's name (the receipt's context).
	Name string
	// URL is the server's base URL.
	URL    string
	secret string

	mu     sync.Mutex
	export privacyapi.ExportPart
	erase  privacyapi.ErasePart
	down   bool
	fail   int
	erased map[int64]erasure
	calls  []Call
}

type erasure struct {
	subject []byte
	part    privacyapi.ErasePart
}

// New starts a fake of context name guarded by secret, closed when t
// ends. It answers an empty part ({} data, no ids, nothing erased) until
// Answer scripts one.
func New(t testing.TB, name, secret string) *Fake {
	t.Helper()
	f := &Fake{Name: name, secret: secret, erased: map[int64]erasure{},
		export: privacyapi.ExportPart{Data: json.RawMessage(`{}`)}}
	mux := http.NewServeMux()
	mux.HandleFunc(privacyapi.RouteExport, f.serveExport)
	mux.HandleFunc(privacyapi.RouteErase, f.serveErase)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	f.URL = srv.URL
	return f
}

// Client calls the fake with the right secret.
func (f *Fake) Client() *privacyapi.Client { return privacyapi.New(f.Name, f.URL, f.secret) }

// Answer scripts the parts the next calls answer; an erasure answered
// already keeps its part.
func (f *Fake) Answer(export privacyapi.ExportPart, erase privacyapi.ErasePart) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.export, f.erase = export, erase
}

// Down makes every call answer 503 (true) until Down(false).
func (f *Fake) Down(down bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.down = down
}

// FailNext makes the next n calls answer 503.
func (f *Fake) FailNext(n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fail = n
}

// Calls are the calls received so far, in order.
func (f *Fake) Calls() []Call {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Call(nil), f.calls...)
}

// Answered are the calls of op answered 200.
func (f *Fake) Answered(op string) []Call {
	var out []Call
	for _, c := range f.Calls() {
		if c.Op == op && c.Status == http.StatusOK {
			out = append(out, c)
		}
	}
	return out
}

// begin records the call and decides whether it fails: 401 without the
// secret, 400 for an unreadable body, 503 while down.
func (f *Fake) begin(w http.ResponseWriter, r *http.Request, c *Call) bool {
	if a := r.Header.Get(history.ActorHeader); a != "" {
		_ = json.Unmarshal([]byte(a), &c.Actor)
	}
	c.Via = r.Header.Get(history.ViaHeader)
	switch {
	case r.Header.Get(auth.InternalHeader) != f.secret:
		c.Status = http.StatusUnauthorized
	case json.NewDecoder(r.Body).Decode(&c.Subject) != nil:
		c.Status = http.StatusBadRequest
	case f.down:
		c.Status = http.StatusServiceUnavailable
	case f.fail > 0:
		f.fail--
		c.Status = http.StatusServiceUnavailable
	default:
		return true
	}
	problem(w, c.Status)
	return false
}

func (f *Fake) serveExport(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := Call{Op: OpExport}
	defer func() { f.calls = append(f.calls, c) }()
	if !f.begin(w, r, &c) {
		return
	}
	c.Status = http.StatusOK
	answer(w, f.export)
}

func (f *Fake) serveErase(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := Call{Op: OpErase}
	defer func() { f.calls = append(f.calls, c) }()
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id <= 0 {
		c.Status = http.StatusNotFound
		problem(w, c.Status)
		return
	}
	c.ErasureID = id
	if !f.begin(w, r, &c) {
		return
	}
	// pkg/privacy fingerprints an erasure id's answer by the ids asked
	// about (never the address): other ids under the id are refused.
	subject, _ := json.Marshal(privacyapi.Found{ContactIDs: c.Subject.ContactIDs, LeadIDs: c.Subject.LeadIDs,
		DealIDs: c.Subject.DealIDs})
	if done, ok := f.erased[id]; ok {
		if string(done.subject) != string(subject) {
			c.Status = http.StatusConflict
			problem(w, c.Status)
			return
		}
		c.Status = http.StatusOK
		answer(w, done.part)
		return
	}
	part := f.erase
	part.Receipt.Context, part.Receipt.Status = f.Name, privacyapi.StatusCompleted
	if part.Receipt.Erased == nil {
		part.Receipt.Erased = map[string]int64{}
	}
	if part.Receipt.Redacted == nil {
		part.Receipt.Redacted = map[string]int64{}
	}
	if part.Receipt.Kept == nil {
		part.Receipt.Kept = []privacyapi.Kept{}
	}
	f.erased[id] = erasure{subject: subject, part: part}
	c.Status = http.StatusOK
	answer(w, part)
}

func answer(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"data": v})
}

// problem answers status as a problem+json body, as the services do.
func problem(w http.ResponseWriter, status int) {
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"status": status, "title": http.StatusText(status),
		"code": map[int]string{http.StatusUnauthorized: "unauthenticated", http.StatusBadRequest: "malformed_json",
			http.StatusServiceUnavailable: "upstream_unavailable", http.StatusConflict: "erasure_reused",
			http.StatusNotFound: "not_found"}[status]})
}
