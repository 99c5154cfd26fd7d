// Package mergeapitest is a fake mover for contacts' merge tests: it
// holds records pointing at contacts and companies and moves them as
// deals, leads and mail do (through mergehttp: the same checks and
// answers, idempotent by nature), records each call, and can be down.
package mergeapitest

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"sync"
	"testing"

	"github.com/opencrm/crm/pkg/auth"
	"github.com/opencrm/crm/pkg/contract/mergeapi"
	"github.com/opencrm/crm/pkg/contract/mergeapi/mergehttp"
	"github.com/opencrm/crm/pkg/history"
	"github.com/opencrm/crm/pkg/problem"
)

// Call is one move the fake was asked for: the merge's id, the body, and
// the channel and actor its changes were recorded under (via is always
// merge: mergehttp forces it; the actor is the X-Crm-Actor header sent).
type Call struct {
	ID    int64
	Move  mergeapi.Move
	Via   string
	Actor string
}

// Fake is one mover: kind names what it counts ("deals", "leads",
// "email_links"); its records point at contacts and companies.
type Fake struct {
	kind, secret string
	h            http.Handler

	mu sync.Mutex
	// points maps an object (contact, company) to record → the id it
	// points at.
	points map[string]map[int64]int64
	calls  []Call
	down   bool
}

// NewFake answers callers presenting the internal secret, counting its
// records as kind.
func NewFake(kind, secret string) *Fake {
	f := &Fake{kind: kind, secret: secret, points: map[string]map[int64]int64{}}
	mux := http.NewServeMux()
	mux.Handle(mergeapi.RouteMove, history.Internal(auth.RequireInternal(secret))(http.HandlerFunc(
		func(w http.ResponseWriter, r *http.Request) {
			id, _ := strconv.ParseInt(r.PathValue("id"), 10, 64)
			mergehttp.Handler(func(ctx context.Context, m mergeapi.Move) (mergeapi.Moved, error) {
				return f.move(ctx, id, m)
			}).ServeHTTP(w, r)
		})))
	f.h = mux
	return f
}

// Start serves f on a loopback listener closed when t ends, with a client
// of it.
func (f *Fake) Start(t testing.TB) (*httptest.Server, *mergeapi.Client) {
	t.Helper()
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return srv, mergeapi.New(f.kind, srv.URL, f.secret)
}

// ServeHTTP serves mergeapi.RouteMove, or 503 while down.
func (f *Fake) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	down := f.down
	f.mu.Unlock()
	if down {
		problem.Write(w, r, problem.Unavailable(f.kind+" is unavailable", 1))
		return
	}
	f.h.ServeHTTP(w, r)
}

// SetDown makes the fake answer 503 (a mover that is down) while down.
func (f *Fake) SetDown(down bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.down = down
}

// Point makes records of the fake point at object (mergeapi.Contact or
// Company) id.
func (f *Fake) Point(object string, id int64, records ...int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.points[object] == nil {
		f.points[object] = map[int64]int64{}
	}
	for _, rec := range records {
		f.points[object][rec] = id
	}
}

// PointingAt lists, in order, the records that point at object id.
func (f *Fake) PointingAt(object string, id int64) []int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := []int64{}
	for rec, to := range f.points[object] {
		if to == id {
			out = append(out, rec)
		}
	}
	slices.Sort(out)
	return out
}

// Calls lists the moves asked for, in order.
func (f *Fake) Calls() []Call {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls)
}

// move repoints the records pointing at one of m.Merged to m.Into and
// counts them.
func (f *Fake) move(ctx context.Context, id int64, m mergeapi.Move) (mergeapi.Moved, error) {
	h := http.Header{}
	history.Propagate(ctx, h)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, Call{ID: id, Move: m, Via: h.Get(history.ViaHeader), Actor: h.Get(history.ActorHeader)})
	var n int64
	for rec, to := range f.points[m.Object] {
		if slices.Contains(m.Merged, to) {
			f.points[m.Object][rec] = m.Into
			n++
		}
	}
	return mergeapi.Moved{f.kind: n}, nil
}
