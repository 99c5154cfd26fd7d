// Package route is the shape of a public route's one declaration. Each
// context declares its routes in its contract package (<ctx>api/routes.go);
// the service mounts its handlers on them, the gateway derives its routing
// and authorization table from them, and the OpenAPI document is derived
// from them too, so a public path is spelled in exactly one place.
package route

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/opencrm/crm/pkg/auth"
)

// Auth is how the gateway authenticates a route before proxying it.
type Auth uint8

// The four policies of the public API (docs/api.md, Authentication).
const (
	// Public needs no credential (login, refresh, logout, JWKS).
	Public Auth = iota
	// JWT needs a valid bearer access token (a person's or an integration token).
	JWT
	// Admin needs a valid bearer access token with role admin.
	Admin
	// Key needs X-API-Key and refuses bearer tokens (the public intake API).
	Key
)

func (a Auth) String() string {
	switch a {
	case Public:
		return "public"
	case JWT:
		return "jwt"
	case Admin:
		return "admin"
	case Key:
		return "key"
	}
	return "unknown"
}

// Body limits. Upload limits add 1 MiB to the service's own file limit for
// multipart framing; the service enforces the exact file size itself.
const (
	LimitJSON     int64 = 1 << 20
	LimitExecuted int64 = 25<<20 + 1<<20
	LimitImport   int64 = 20<<20 + 1<<20
	LimitPublic   int64 = 64 << 10
)

// Media is the kind of a request or answer body.
type Media uint8

const (
	// JSON is application/json, the default of a body with a Go value.
	JSON Media = iota
	// Form is multipart/form-data with a file field (an upload).
	Form
	// CSV is a text/csv download.
	CSV
	// PDF is an application/pdf download.
	PDF
	// DOCX is a Word download.
	DOCX
)

// Route is one public operation. Path is the path under /api as the client
// sees it, and also the path the owning service serves.
type Route struct {
	Method  string
	Path    string
	Service string
	Auth    Auth
	// Resource names the integration-token scope family of a JWT or Admin
	// route (see Scope).
	Resource string
	// BodyLimit is the request body limit in bytes; 0 means LimitJSON.
	BodyLimit int64
	Tag       string
	Summary   string
	// Description adds to the summary in the document where the summary
	// is not enough.
	Description string

	// Query lists the query parameters the route reads.
	Query []Param
	// Request is a zero value of the body's Go type, the one the service
	// decodes: a JSON body, or the form's fields when Accepts is Form.
	// Nil with JSON means the route takes no body.
	Request any
	// Accepts is the request body's kind.
	Accepts Media
	// OptionalBody marks a JSON body the client may leave out.
	OptionalBody bool

	// Status is the success status; 0 means 200.
	Status int
	// Response is a zero value of the success answer's Go type (an
	// envelope such as envelope.Record[leadsapi.Lead]), for a JSON answer.
	Response any
	// Answers is the success answer's kind.
	Answers Media
	// Message is the message a write's success answer carries, word for
	// word: the service answers with it and the document's example shows it.
	Message string
	// Alternatives are successes other than Status (an idempotent replay,
	// an accepted-for-later).
	Alternatives []Alternative
	// Problems are the error statuses the route answers beyond the ones
	// every route of its kind may (a refused login's 401, a state
	// conflict's 409, an unrenderable document's 422).
	Problems []int
	// Link marks a download that sends a Link header to the documentation.
	Link bool
	// ReadOnly marks a POST that only reads (a batch read, whose ids do
	// not fit a query string): its scope is <resource>:read.
	ReadOnly bool
	// By, when set, chooses the service per request from a query
	// parameter (a route over every context's records); Service is then
	// empty.
	By *Dispatch
	// Deprecated, when set, announces the route's removal: the document
	// marks it deprecated with its sunset, and the gateway sends the
	// Deprecation and Sunset headers on its every answer (docs/releasing.md).
	Deprecated *Deprecation
}

// SunsetDays is the least number of days between a deprecation and its
// sunset (docs/releasing.md: six months); the breaking-change gate
// (gateway/tools/apicompat) refuses a shorter notice.
const SunsetDays = 183

// Deprecation is the announcement that an operation or a query parameter
// goes away. It is declared once, here, so the document's deprecated and
// x-sunset, the Deprecation and Sunset headers and the gate's check are
// read from the same dates and cannot disagree.
type Deprecation struct {
	// Since is the day the deprecation was announced: the date of the
	// release deprecating it (UTC midnight; see Day).
	Since time.Time
	// Sunset is the first day it may be removed, at least SunsetDays
	// after Since (UTC midnight).
	Sunset time.Time
	// Replacement says what to use instead: an operation ("GET
	// /contacts/{id}/emails") or a parameter, in a sentence or a link.
	Replacement string
}

// Day is the UTC midnight of a calendar date, the form of a
// Deprecation's dates.
func Day(year int, month time.Month, day int) time.Time {
	return time.Date(year, month, day, 0, 0, 0, 0, time.UTC)
}

// Check reports what is wrong with a deprecation: a date missing or not
// a UTC midnight, or a sunset less than SunsetDays after Since.
func (d *Deprecation) Check() error {
	if d == nil {
		return nil
	}
	var errs []error
	for _, f := range []struct {
		name string
		t    time.Time
	}{{"since", d.Since}, {"sunset", d.Sunset}} {
		switch {
		case f.t.IsZero():
			errs = append(errs, fmt.Errorf("deprecation: no %s date", f.name))
		case f.t.Location() != time.UTC || !f.t.Equal(f.t.Truncate(24*time.Hour)):
			errs = append(errs, fmt.Errorf("deprecation: %s %s is not a date (UTC midnight)", f.name, f.t))
		}
	}
	if len(errs) == 0 && d.Sunset.Before(d.Since.AddDate(0, 0, SunsetDays)) {
		errs = append(errs, fmt.Errorf("deprecation: sunset %s is less than %d days after %s",
			d.Sunset.Format(time.DateOnly), SunsetDays, d.Since.Format(time.DateOnly)))
	}
	return errors.Join(errs...)
}

// CheckDeprecations reports every deprecation of r, its own and its query
// parameters', that Check refuses, naming the route and parameter.
func (r Route) CheckDeprecations() error {
	var errs []error
	if err := r.Deprecated.Check(); err != nil {
		errs = append(errs, fmt.Errorf("%s: %w", r.Pattern(), err))
	}
	for _, q := range r.Query {
		if err := q.Deprecated.Check(); err != nil {
			errs = append(errs, fmt.Errorf("%s: query parameter %s: %w", r.Pattern(), q.Name, err))
		}
	}
	return errors.Join(errs...)
}

// Dispatch routes a request to the service its query parameter Param
// names through Services (a value → a service); the gateway refuses any
// other value with a 422 naming Param.
type Dispatch struct {
	Param    string
	Services map[string]string
}

// ServiceFor is the service that answers a request whose query is
// query: Service, or the one r.By chooses ("" when the value is not one
// of its).
func (r Route) ServiceFor(query func(string) string) string {
	if r.By == nil {
		return r.Service
	}
	return r.By.Services[query(r.By.Param)]
}

// Alternative is a success answer besides a route's main one.
type Alternative struct {
	Status      int
	Description string
	Message     string
	// Responses are the Go types the answer may have; none means the
	// route's Response.
	Responses []any
}

// Param is a query parameter; Enum lists its allowed values.
type Param struct {
	Name, Type, Desc string
	Enum             []string
	Required         bool
	// Format is the value's format (date, date-time).
	Format string
	// Min and Max bound an integer; nil is unbounded.
	Min, Max *int
	// MaxLength bounds a string; 0 is unbounded.
	MaxLength int
	// Default is the value the service assumes when the parameter is absent.
	Default any
	// Style "deepObject" declares a family of parameters name[key]=value
	// (the custom-field filters cf[tier]=gold): Type is then "object".
	Style string
	// Deprecated, when set, announces the parameter's removal: the
	// document marks it deprecated with its sunset. The operation's
	// answers carry no headers for it (RFC 9745 deprecates a resource,
	// not one of its parameters).
	Deprecated *Deprecation
}

// Q declares an optional query parameter.
func Q(name, typ, desc string, enum ...string) Param {
	return Param{Name: name, Type: typ, Desc: desc, Enum: enum}
}

// ID declares an optional query parameter holding a record id.
func ID(name, desc string) Param {
	return Param{Name: name, Type: "integer", Desc: desc, Min: new(1)}
}

// Date declares an optional YYYY-MM-DD query parameter.
func Date(name, desc string) Param {
	return Param{Name: name, Type: "string", Desc: desc, Format: "date"}
}

// Query parameters shared by the lists (docs/api.md, "Lists").
var (
	Page    = Param{Name: "page", Type: "integer", Desc: "Page number, default 1.", Min: new(1), Default: 1}
	PerPage = Param{Name: "per_page", Type: "integer", Desc: "Page size, default 25, at most 100.", Min: new(1), Max: new(100), Default: 25}
	Search  = Param{Name: "search", Type: "string", Desc: "Case-insensitive search term.", MaxLength: 200}
	SortDir = Param{Name: "sort_dir", Type: "string", Desc: "ASC (default) or DESC.", Enum: []string{"ASC", "DESC", "asc", "desc"}, Default: "ASC"}
	// Scope filters by owner.
	Scope = Q("scope", "string", "Whose records: mine, my team's, or the company's.", "me", "team", "company")
	// UpdatedSince and AfterID are the incremental sync filter (docs/api.md, "Incremental sync").
	UpdatedSince = Param{Name: "updated_since", Type: "string", Desc: "Records updated at or after this RFC 3339 timestamp (inclusive).", Format: "date-time"}
	AfterID      = ID("after_id", "Sync cursor: with updated_since, sort_by=updated_at and sort_dir=asc, only records whose (updated_at, id) comes after (updated_since, after_id).")
	// DateFrom and DateTo bound created_at.
	DateFrom = Date("date_from", "created_at from, YYYY-MM-DD.")
	DateTo   = Date("date_to", "created_at to, YYYY-MM-DD.")
	// AssignedTo filters by the assigned user.
	AssignedTo = ID("assigned_to", "User id.")
)

// PageQuery is the parameters of every paginated list, followed by more.
func PageQuery(more ...Param) []Param {
	return append([]Param{Page, PerPage, Search, SortDir}, more...)
}

// Prefix is where the gateway serves the public API: a client's path is
// Prefix + Path.
const Prefix = "/api"

// Location is the URL a client reads the record at, Prefix + Path with its
// wildcards filled by ids in order ("/api/leads/42" for GetLead and 42):
// the Location of a 201, built from the declaration of the record's route
// rather than spelled again. Missing ids leave their wildcards as they are.
func (r Route) Location(ids ...int64) string {
	var b strings.Builder
	b.WriteString(Prefix)
	for seg := range strings.SplitSeq(strings.TrimPrefix(r.Path, "/"), "/") {
		b.WriteByte('/')
		if strings.HasPrefix(seg, "{") && len(ids) > 0 {
			b.WriteString(strconv.FormatInt(ids[0], 10))
			ids = ids[1:]
			continue
		}
		b.WriteString(seg)
	}
	return b.String()
}

// Pattern is the route as a net/http ServeMux pattern ("GET /leads/{id}").
func (r Route) Pattern() string { return r.Method + " " + r.Path }

// Scope is the integration-token scope the route needs ("" when any valid
// token may call it): reads need "<Resource>:read", other methods
// "<Resource>:write"; a JWT route naming no Resource is open to any token
// (only /auth/me, "who am I"). An Admin route needs the admin scope unless
// it names a Resource: then a person still needs the admin role, and an
// integration token needs that resource's scope whatever its role
// (webhooks, which an integration sets up for itself).
func (r Route) Scope() string {
	switch {
	case r.Auth == Admin && r.Resource == "":
		return auth.ScopeAdmin
	case (r.Auth != JWT && r.Auth != Admin) || r.Resource == "":
		return ""
	case r.Method == http.MethodGet || r.Method == http.MethodHead || r.ReadOnly:
		return r.Resource + ":read"
	}
	return r.Resource + ":write"
}

// Limit is the route's request body limit.
func (r Route) Limit() int64 {
	if r.BodyLimit > 0 {
		return r.BodyLimit
	}
	return LimitJSON
}

// SuccessStatus is the route's success status.
func (r Route) SuccessStatus() int {
	if r.Status == 0 {
		return http.StatusOK
	}
	return r.Status
}

// HasBody reports whether the route takes a request body.
func (r Route) HasBody() bool { return r.Request != nil || r.Accepts != JSON }
