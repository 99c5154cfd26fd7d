// Package dealsapitest is the deals context's fake for other contexts'
// tests: its internal API answered from memory, validating a body (stage,
// company, contact, source lead, value, custom fields against the
// definitions Define gave it) before it looks up the Idempotency-Key as
// deals does, and serving those definitions' internal read. Run is the contract both the fake and
// deals' real handlers pass (deals' own tests run it), so the fake cannot
// drift. Faults (a service down, a lost answer) are the consumer test's
// plumbing around the handler.
package dealsapitest

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/shopspring/decimal"

	"github.com/opencrm/crm/pkg/auth"
	"github.com/opencrm/crm/pkg/contract/dealsapi"
	"github.com/opencrm/crm/pkg/contract/internal/fakeidem"
	"github.com/opencrm/crm/pkg/contract/propertyapi"
	"github.com/opencrm/crm/pkg/customfield"
	"github.com/opencrm/crm/pkg/fault"
	"github.com/opencrm/crm/pkg/history"
	"github.com/opencrm/crm/pkg/httpx"
	"github.com/opencrm/crm/pkg/problem"
	"github.com/opencrm/crm/pkg/validate"
)

// References answers whether the records a deal points at exist: the
// consumer wires its contacts fake and its own leads.
type References struct {
	Company, Contact, Lead func(id int64) bool
}

// Stages are the pipeline stage ids the fake knows (deals seeds six).
var Stages = []int64{1, 2, 3, 4, 5, 6}

// Fake answers the deals internal API from memory.
type Fake struct {
	h      http.Handler
	secret string
	refs   References
	idem   fakeidem.Store

	mu      sync.Mutex
	deals   map[int64]map[string]any
	defs    []propertyapi.Property
	callers map[int64]Caller // by deal
}

// Caller is who a create's request said it acted for: its X-Crm-Actor and
// X-Crm-Via headers (pkg/history) as sent, empty when absent.
type Caller struct{ Actor, Via string }

// NewFake answers callers presenting the internal secret; a nil reference
// check accepts every positive id.
func NewFake(secret string, refs References) *Fake {
	all := func(int64) bool { return true }
	for _, c := range []*func(int64) bool{&refs.Company, &refs.Contact, &refs.Lead} {
		if *c == nil {
			*c = all
		}
	}
	f := &Fake{secret: secret, refs: refs, deals: map[int64]map[string]any{}, callers: map[int64]Caller{}}
	mux := http.NewServeMux()
	mux.HandleFunc(dealsapi.RouteCreateDeal, f.create)
	mux.HandleFunc(dealsapi.RouteDeal, f.get(false))
	mux.HandleFunc(dealsapi.RouteMerge, f.get(true))
	mux.HandleFunc(dealsapi.RouteStage, f.stage)
	mux.HandleFunc(propertyapi.RouteInternal(propertyapi.Deals), f.properties)
	f.h = auth.RequireInternal(secret)(mux)
	return f
}

// Start serves f on a loopback listener closed when t ends.
func (f *Fake) Start(t testing.TB) (*httptest.Server, *dealsapi.Client) {
	t.Helper()
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return srv, dealsapi.New(srv.URL, f.secret)
}

// ServeHTTP implements the internal routes behind the internal secret.
func (f *Fake) ServeHTTP(w http.ResponseWriter, r *http.Request) { f.h.ServeHTTP(w, r) }

func knownStage(id int64) bool {
	for _, s := range Stages {
		if s == id {
			return true
		}
	}
	return false
}

// Define adds custom fields of deals: the internal read lists them and a
// create's custom_fields are checked against them (any positive user id
// exists).
func (f *Fake) Define(defs ...propertyapi.PropertyInput) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, in := range defs {
		opts := in.Options
		if opts == nil {
			opts = []propertyapi.Option{}
		}
		f.defs = append(f.defs, propertyapi.Property{Object: propertyapi.Deals, Name: in.Name, Label: in.Label,
			Type: in.Type, Options: opts, Required: in.Required, Unique: in.Unique, Description: in.Description,
			Position: in.Position})
	}
}

func (f *Fake) definitions() []propertyapi.Property {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]propertyapi.Property{}, f.defs...)
}

func (f *Fake) properties(w http.ResponseWriter, _ *http.Request) {
	httpx.JSON(w, http.StatusOK, propertyapi.Definitions{Data: f.definitions()})
}

// checkCustom checks the body's custom fields by the rules deals applies
// (customfield.Check) and returns them as the deal reads them, adding
// their refusals to v.
func (f *Fake) checkCustom(raw []byte, v *validate.Errors) map[string]any {
	var body struct {
		CustomFields map[string]json.RawMessage `json:"custom_fields"`
	}
	if json.Unmarshal(raw, &body) != nil {
		return nil
	}
	defs := f.definitions()
	anyUser := func(_ context.Context, id int64) (bool, error) { return id > 0, nil }
	vals, err := customfield.Check(context.Background(), defs, nil, customfield.Input(body.CustomFields), anyUser)
	var e *fault.Error
	if errors.As(err, &e) {
		for _, fe := range e.Fields {
			v.Add(fe.Field, "%s", fe.Message)
		}
	}
	return customfield.Render(defs, vals)
}

// validate checks a create body as deals does, every field at once, and
// returns its custom fields as the deal reads them.
func (f *Fake) validate(in map[string]any, raw []byte) (map[string]any, error) {
	var v validate.Errors
	title, _ := in[dealsapi.FieldTitle].(string)
	if v.Required(dealsapi.FieldTitle, strings.TrimSpace(title)) {
		v.MaxLen(dealsapi.FieldTitle, strings.TrimSpace(title), validate.MaxString)
	}
	if raw, ok := in[dealsapi.FieldValue]; ok && raw != nil {
		s, _ := raw.(string)
		if n, ok := raw.(json.Number); ok {
			s = n.String()
		}
		d, err := decimal.NewFromString(s)
		switch {
		case err != nil:
			v.Add(dealsapi.FieldValue, "must be a decimal number")
		case d.IsNegative():
			v.Add(dealsapi.FieldValue, "must not be negative")
		case !d.Equal(d.Truncate(dealsapi.ValuePlaces)):
			v.Add(dealsapi.FieldValue, "must have at most %d decimal places in this currency", dealsapi.ValuePlaces)
		case d.GreaterThanOrEqual(dealsapi.MaxValue):
			v.Add(dealsapi.FieldValue, "must be less than %s", dealsapi.MaxValue.String())
		}
	}
	ref := func(field, msg string, exists func(int64) bool) {
		n, ok := in[field].(json.Number)
		if !ok {
			return
		}
		id, err := n.Int64()
		if err != nil || id <= 0 {
			v.Add(field, "must be a positive integer")
			return
		}
		if !exists(id) {
			v.Add(field, "%s", msg)
		}
	}
	ref(dealsapi.FieldStageID, "does not exist", knownStage)
	ref(dealsapi.FieldCompanyID, "does not exist", f.refs.Company)
	ref(dealsapi.FieldContactID, "does not exist", f.refs.Contact)
	ref(dealsapi.FieldSourceLeadID, "does not exist", f.refs.Lead)
	custom := f.checkCustom(raw, &v)
	return custom, v.Err()
}

func (f *Fake) create(w http.ResponseWriter, r *http.Request) {
	raw, err := io.ReadAll(io.LimitReader(r.Body, httpx.MaxJSONBody+1))
	if err != nil {
		problem.Write(w, r, err)
		return
	}
	var in map[string]any
	if err := httpx.DecodeBytes(raw, &in, 0); err != nil {
		problem.Write(w, r, err)
		return
	}
	custom, err := f.validate(in, raw)
	if err != nil {
		problem.Write(w, r, err)
		return
	}
	f.idem.Run(w, r, dealsapi.PathDeals, raw, func() (int, any, error) {
		var rec map[string]any
		_ = json.Unmarshal(raw, &rec)
		f.mu.Lock()
		defer f.mu.Unlock()
		id := int64(len(f.deals) + 500)
		rec["id"] = id
		rec["custom_fields"] = custom
		f.deals[id] = rec
		f.callers[id] = Caller{Actor: r.Header.Get(history.ActorHeader), Via: r.Header.Get(history.ViaHeader)}
		return http.StatusCreated, map[string]any{"success": true, "data": rec, "message": "Deal created"}, nil
	})
}

func (f *Fake) get(merge bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id, _ := strconv.ParseInt(r.PathValue("id"), 10, 64)
		d := f.Deal(id)
		if d == nil {
			problem.Write(w, r, problem.NotFound("deal"))
			return
		}
		if merge {
			httpx.OK(w, map[string]any{"deal": d})
			return
		}
		httpx.OK(w, d)
	}
}

func (f *Fake) stage(w http.ResponseWriter, r *http.Request) {
	id, _ := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if !knownStage(id) {
		problem.Write(w, r, problem.NotFound("stage"))
		return
	}
	httpx.OK(w, map[string]any{"id": id})
}

// Reserve makes key already used for another body.
func (f *Fake) Reserve(key string) { f.idem.Reserve(dealsapi.PathDeals, key) }

// Count is how many deals exist.
func (f *Fake) Count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.deals)
}

// CreatedBy is the caller of the request that created deal id; a replay
// leaves it as the first request set it.
func (f *Fake) CreatedBy(id int64) Caller {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.callers[id]
}

// Deal returns a copy of deal id's stored body (nil when absent).
func (f *Fake) Deal(id int64) map[string]any {
	f.mu.Lock()
	defer f.mu.Unlock()
	d, ok := f.deals[id]
	if !ok {
		return nil
	}
	out := make(map[string]any, len(d))
	for k, v := range d {
		out[k] = v
	}
	return out
}
