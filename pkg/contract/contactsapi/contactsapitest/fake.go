// Package contactsapitest is the contacts context's fake for other
// contexts' tests: its internal API answered from memory, with the real
// Idempotency-Key rules, checking a create's custom fields against the
// definitions Define gave it and serving those definitions' internal
// read. Run is the contract both the fake and contacts' real handlers pass
// (contacts' own tests run it), so the fake cannot drift from the service. Faults (a service down, a lost answer) are the
// consumer test's plumbing around the handler.
package contactsapitest

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/opencrm/crm/pkg/auth"
	"github.com/opencrm/crm/pkg/contract/contactsapi"
	"github.com/opencrm/crm/pkg/contract/internal/fakeidem"
	"github.com/opencrm/crm/pkg/contract/propertyapi"
	"github.com/opencrm/crm/pkg/customfield"
	"github.com/opencrm/crm/pkg/fault"
	"github.com/opencrm/crm/pkg/history"
	"github.com/opencrm/crm/pkg/httpx"
	"github.com/opencrm/crm/pkg/problem"
	"github.com/opencrm/crm/pkg/validate"
)

// Fake answers the contacts internal API from memory.
type Fake struct {
	h      http.Handler
	secret string
	idem   fakeidem.Store

	mu        sync.Mutex
	contacts  map[int64]map[string]any
	companies map[int64]map[string]any
	nextID    int64
	defs      map[string][]propertyapi.Property // by object
	callers   map[string]map[int64]Caller       // by route path, then record id
}

// Caller is who a create's request said it acted for: its X-Crm-Actor and
// X-Crm-Via headers (pkg/history) as sent, empty when absent.
type Caller struct{ Actor, Via string }

func callerOf(r *http.Request) Caller {
	return Caller{Actor: r.Header.Get(history.ActorHeader), Via: r.Header.Get(history.ViaHeader)}
}

// NewFake answers callers presenting the internal secret.
func NewFake(secret string) *Fake {
	f := &Fake{secret: secret, contacts: map[int64]map[string]any{}, companies: map[int64]map[string]any{}, nextID: 100,
		defs: map[string][]propertyapi.Property{}, callers: map[string]map[int64]Caller{}}
	mux := http.NewServeMux()
	mux.HandleFunc(contactsapi.RouteCreateContact, f.create(contactsapi.PathContacts, propertyapi.Contacts, f.contacts, contactsapi.FieldFirstName, contactsapi.FieldLastName))
	mux.HandleFunc(contactsapi.RouteCreateCompany, f.create(contactsapi.PathCompanies, propertyapi.Companies, f.companies, contactsapi.FieldCompanyName))
	for _, object := range []string{propertyapi.Contacts, propertyapi.Companies} {
		mux.HandleFunc(propertyapi.RouteInternal(object), f.properties(object))
	}
	mux.HandleFunc(contactsapi.RouteContact, f.get(f.contacts, false))
	mux.HandleFunc(contactsapi.RouteCompany, f.get(f.companies, true))
	mux.HandleFunc(contactsapi.RouteMatchContacts, f.matchContacts)
	mux.HandleFunc(contactsapi.RouteContactsByID, f.contactsByID)
	mux.HandleFunc(contactsapi.RouteMatchCompanies, f.matchCompanies)
	f.h = auth.RequireInternal(secret)(mux)
	return f
}

// Start serves f on a loopback listener closed when t ends.
func (f *Fake) Start(t testing.TB) (*httptest.Server, *contactsapi.Client) {
	t.Helper()
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return srv, contactsapi.New(srv.URL, f.secret)
}

// ServeHTTP implements the internal routes behind the internal secret.
func (f *Fake) ServeHTTP(w http.ResponseWriter, r *http.Request) { f.h.ServeHTTP(w, r) }

// Define adds custom fields of object (propertyapi.Contacts or
// Companies): the internal read lists them and a create's custom_fields
// are checked against them (any positive user id exists).
func (f *Fake) Define(object string, defs ...propertyapi.PropertyInput) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, in := range defs {
		opts := in.Options
		if opts == nil {
			opts = []propertyapi.Option{}
		}
		f.defs[object] = append(f.defs[object], propertyapi.Property{Object: object, Name: in.Name, Label: in.Label,
			Type: in.Type, Options: opts, Required: in.Required, Unique: in.Unique, Description: in.Description,
			Position: in.Position})
	}
}

func (f *Fake) definitions(object string) []propertyapi.Property {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]propertyapi.Property{}, f.defs[object]...)
}

func (f *Fake) properties(object string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		httpx.JSON(w, http.StatusOK, propertyapi.Definitions{Data: f.definitions(object)})
	}
}

// checkCustom checks the body's custom fields by the rules contacts
// applies (customfield.Check) and returns them as the record reads them
// (every defined name, null where empty), adding their refusals to v.
func (f *Fake) checkCustom(object string, raw []byte, v *validate.Errors) map[string]any {
	var body struct {
		CustomFields map[string]json.RawMessage `json:"custom_fields"`
	}
	_ = json.Unmarshal(raw, &body) // the body already decoded as an object
	defs := f.definitions(object)
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

func (f *Fake) create(scope, object string, m map[int64]map[string]any, required ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		raw, err := io.ReadAll(io.LimitReader(r.Body, httpx.MaxJSONBody+1))
		if err != nil {
			problem.Write(w, r, err)
			return
		}
		var rec map[string]any
		if err := json.Unmarshal(raw, &rec); err != nil || rec == nil {
			problem.Write(w, r, problem.MalformedJSON("body must be a JSON object"))
			return
		}
		var v validate.Errors
		for _, field := range required {
			s, _ := rec[field].(string)
			rec[field] = strings.TrimSpace(s)
			v.Required(field, strings.TrimSpace(s))
		}
		rec["custom_fields"] = f.checkCustom(object, raw, &v)
		if err := v.Err(); err != nil {
			problem.Write(w, r, err)
			return
		}
		f.idem.Run(w, r, scope, raw, func() (int, any, error) {
			f.mu.Lock()
			defer f.mu.Unlock()
			f.nextID++
			rec["id"] = f.nextID
			m[f.nextID] = rec
			if f.callers[scope] == nil {
				f.callers[scope] = map[int64]Caller{}
			}
			f.callers[scope][f.nextID] = callerOf(r)
			return http.StatusCreated, map[string]any{"data": rec}, nil
		})
	}
}

func (f *Fake) get(m map[int64]map[string]any, company bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id, _ := strconv.ParseInt(r.PathValue("id"), 10, 64)
		f.mu.Lock()
		defer f.mu.Unlock()
		rec, ok := m[id]
		if !ok {
			problem.Write(w, r, problem.NotFound(""))
			return
		}
		out := copyMap(rec)
		if company {
			out["primary_contact"] = f.primary(id)
		}
		httpx.JSON(w, http.StatusOK, map[string]any{"data": out})
	}
}

// primary is the company's earliest created contact (nil when none).
func (f *Fake) primary(company int64) any {
	var first int64
	for id, c := range f.contacts {
		if n, ok := c["company_id"].(float64); ok && int64(n) == company && (first == 0 || id < first) {
			first = id
		}
	}
	if first == 0 {
		return nil
	}
	return f.contacts[first]
}

var punct = regexp.MustCompile(`[^a-z0-9 ]+`)

func normName(s string) string {
	return strings.Join(strings.Fields(punct.ReplaceAllString(strings.ToLower(s), "")), " ")
}

func (f *Fake) matchCompanies(w http.ResponseWriter, r *http.Request) {
	want := normName(r.URL.Query().Get("name"))
	if want == "" {
		problem.Write(w, r, problem.Invalid("name", "is required"))
		return
	}
	limit := 5
	if v := r.URL.Query().Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > contactsapi.MaxMatchLimit {
			problem.Write(w, r, problem.Invalid("limit", "must be an integer between 1 and 50"))
			return
		}
		limit = n
	}
	type scored struct {
		rec   map[string]any
		score float64
	}
	var found []scored
	f.mu.Lock()
	for _, c := range f.companies {
		n := normName(c[contactsapi.FieldCompanyName].(string))
		switch {
		case n == want:
			found = append(found, scored{c, 1})
		case n != "" && (strings.Contains(n, want) || strings.Contains(want, n)):
			found = append(found, scored{c, 0.5})
		}
	}
	f.mu.Unlock()
	slices.SortFunc(found, func(a, b scored) int {
		if a.score != b.score {
			if a.score > b.score {
				return -1
			}
			return 1
		}
		return int(a.rec["id"].(int64) - b.rec["id"].(int64))
	})
	out := []map[string]any{}
	for _, s := range found[:min(limit, len(found))] {
		m := copyMap(s.rec)
		m["score"] = s.score
		out = append(out, m)
	}
	httpx.JSON(w, http.StatusOK, map[string]any{"data": out})
}

func (f *Fake) contactsByID(w http.ResponseWriter, r *http.Request) {
	ids, ok := contactsapi.ParseIDs(r.URL.Query().Get("ids"))
	if !ok {
		problem.Write(w, r, problem.Invalid("ids", "must be 1 to 1000 comma-separated ids"))
		return
	}
	slices.Sort(ids)
	out := []map[string]any{}
	f.mu.Lock()
	for _, id := range slices.Compact(ids) {
		if c, ok := f.contacts[id]; ok {
			out = append(out, copyMap(c))
		}
	}
	f.mu.Unlock()
	httpx.JSON(w, http.StatusOK, map[string]any{"data": out})
}

func (f *Fake) matchContacts(w http.ResponseWriter, r *http.Request) {
	want := strings.ToLower(strings.TrimSpace(r.URL.Query().Get("email")))
	if want == "" {
		problem.Write(w, r, problem.Invalid("email", "is required"))
		return
	}
	out := []map[string]any{}
	f.mu.Lock()
	for _, c := range f.contacts {
		if e, _ := c["email"].(string); strings.ToLower(e) == want {
			out = append(out, copyMap(c))
		}
	}
	f.mu.Unlock()
	httpx.JSON(w, http.StatusOK, map[string]any{"data": out})
}

// Reserve makes key already used for another body on the route of path
// (contactsapi.PathContacts or PathCompanies).
func (f *Fake) Reserve(path, key string) { f.idem.Reserve(path, key) }

// PutContact stores a contact under a chosen id, as if created earlier.
func (f *Fake) PutContact(id int64, rec map[string]any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := copyMap(rec)
	c["id"] = id
	f.contacts[id] = c
	f.nextID = max(f.nextID, id)
}

// CreatedBy is the caller of the request that created record id on the
// route of path (contactsapi.PathContacts or PathCompanies); a replay
// leaves it as the first request set it.
func (f *Fake) CreatedBy(path string, id int64) Caller {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.callers[path][id]
}

// HasContact tells whether contact id exists.
func (f *Fake) HasContact(id int64) bool { return f.has(f.contacts, id) }

// HasCompany tells whether company id exists.
func (f *Fake) HasCompany(id int64) bool { return f.has(f.companies, id) }

func (f *Fake) has(m map[int64]map[string]any, id int64) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, ok := m[id]
	return ok
}

// Contact returns a copy of contact id's stored record (nil when absent).
func (f *Fake) Contact(id int64) map[string]any {
	f.mu.Lock()
	defer f.mu.Unlock()
	if c, ok := f.contacts[id]; ok {
		return copyMap(c)
	}
	return nil
}

// DeleteContact removes a contact, as DELETE /contacts/{id} does.
func (f *Fake) DeleteContact(id int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.contacts, id)
}

// Counts returns how many contacts and companies exist.
func (f *Fake) Counts() (contacts, companies int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.contacts), len(f.companies)
}

func copyMap(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
