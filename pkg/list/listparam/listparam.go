// Package listparam reads a list request's query string at the edge into
// a list.Query and a context's own filters, collecting every bad parameter
// into one invalid-input fault (422 with an errors array).
package listparam

import (
	"errors"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/opencrm/crm/pkg/customfield"
	"github.com/opencrm/crm/pkg/fault"
	"github.com/opencrm/crm/pkg/list"
	"github.com/opencrm/crm/pkg/validate"
)

// Options are what a collection accepts besides the common parameters.
type Options struct {
	// Sorts are the public sort keys; DefaultSort is used without sort_by.
	Sorts       []string
	DefaultSort string
	// Sync reads updated_since and after_id (docs/api.md, "Incremental
	// sync"); Sorts should then hold "updated_at".
	Sync bool
	// CustomFields marks a collection whose records carry custom fields:
	// Custom then reads cf[...] filters and cf.<name> sorts against
	// Definitions.
	CustomFields bool
	Definitions  []customfield.Definition
}

// Parser holds one request's parameters and the errors found so far.
type Parser struct {
	q      list.Query
	custom customfield.Query
	values url.Values
	errs   validate.Errors
}

// Parse reads the common parameters; a collection's own filters are read
// afterwards with Int64, Enum, EnumList and String; Err returns every
// problem at once.
func Parse(values url.Values, opts Options) *Parser {
	p := &Parser{q: list.Query{Page: 1, PerPage: list.DefaultPerPage}}
	for name, vs := range values {
		for _, v := range vs {
			if msg := validate.Text(v); msg != "" && !p.errs.Has(name) {
				p.errs.Add(name, "%s", msg)
			}
		}
	}
	p.values = storable(values)
	p.page()
	p.q.Search = strings.TrimSpace(p.values.Get("search"))
	if len([]rune(p.q.Search)) > list.MaxSearch {
		p.errs.Add("search", "must be at most %d characters", list.MaxSearch)
	}
	p.q.SortBy = opts.DefaultSort
	if v := p.values.Get("sort_by"); v != "" {
		if opts.CustomFields && strings.HasPrefix(v, customfield.SortPrefix) {
			p.q.SortBy = v // checked with the filters below
		} else if !slices.Contains(opts.Sorts, v) {
			p.errs.Add("sort_by", "must be one of %s", strings.Join(slices.Sorted(slices.Values(opts.Sorts)), ", "))
		} else {
			p.q.SortBy = v
		}
	}
	switch strings.ToUpper(p.values.Get("sort_dir")) {
	case "", "ASC":
	case "DESC":
		p.q.Desc = true
	default:
		p.errs.Add("sort_dir", "must be ASC or DESC")
	}
	p.q.DateFrom = p.errs.Date("date_from", p.values.Get("date_from"))
	if to := p.errs.Date("date_to", p.values.Get("date_to")); to != nil {
		next := to.AddDate(0, 0, 1)
		p.q.DateTo = &next
	}
	if p.q.DateFrom != nil && p.q.DateTo != nil && !p.q.DateFrom.Before(*p.q.DateTo) {
		p.errs.Add("date_to", "must not be before date_from")
	}
	p.q.Scope = p.Enum("scope", list.ScopeMe, list.ScopeTeam, list.ScopeCompany)
	if opts.Sync {
		p.since()
	}
	if opts.CustomFields {
		p.customFields(opts.Definitions)
	}
	return p
}

// customFields reads the cf[...] filters and a cf.<name> sort, adding
// their problems to the request's others.
func (p *Parser) customFields(defs []customfield.Definition) {
	sortKey := ""
	if strings.HasPrefix(p.q.SortBy, customfield.SortPrefix) {
		sortKey = p.q.SortBy
	}
	custom, err := customfield.ParseFilters(p.values, sortKey, defs)
	var f *fault.Error
	if errors.As(err, &f) {
		for _, e := range f.Fields {
			p.errs.Add(e.Field, "%s", e.Message)
		}
		return
	}
	p.custom = custom
}

// Custom is the request's custom-field filters and sort (Options.CustomFields).
func (p *Parser) Custom() customfield.Query { return p.custom }

func (p *Parser) page() {
	if v := p.values.Get("page"); v != "" {
		n, err := strconv.Atoi(v)
		switch {
		case errors.Is(err, strconv.ErrRange) && !strings.HasPrefix(v, "-"):
			// A page past every integer range is past the last page: an
			// empty page, like any other page after the end.
			p.q.Page = list.MaxPage
		case err != nil || n < 1:
			p.errs.Add("page", "must be an integer of at least 1")
		default:
			p.q.Page = min(n, list.MaxPage)
		}
	}
	if v := p.values.Get("per_page"); v != "" {
		n, err := strconv.Atoi(v)
		switch {
		case err != nil || n < 1:
			p.errs.Add("per_page", "must be an integer between 1 and %d", list.MaxPerPage)
		default:
			p.q.PerPage = min(n, list.MaxPerPage)
		}
	}
}

// since reads updated_since (RFC 3339, truncated to PostgreSQL's
// microseconds so the bound never rounds up past a record) and after_id,
// the keyset cursor that makes a sync page stably while records change.
func (p *Parser) since() {
	if v := p.values.Get("updated_since"); v != "" {
		t, err := time.Parse(time.RFC3339Nano, v)
		switch {
		case err != nil:
			p.errs.Add("updated_since", "must be an RFC 3339 timestamp such as 2026-01-02T15:04:05Z")
		case t.Year() < validate.MinYear:
			p.errs.Add("updated_since", "must be on or after %d-01-01", validate.MinYear)
		default:
			t = t.UTC().Truncate(time.Microsecond)
			p.q.UpdatedSince = &t
		}
	}
	p.q.AfterID = p.Int64("after_id")
	if p.q.AfterID != nil && (p.q.UpdatedSince == nil || p.q.SortBy != "updated_at" || p.q.Desc) {
		p.errs.Add("after_id", "requires updated_since, sort_by=updated_at and sort_dir=asc")
		p.q.AfterID = nil
	}
}

// storable drops the parameters whose values are not text PostgreSQL can
// compare against (Parse reports them), so no reader of the query ever
// puts one into a statement.
func storable(values url.Values) url.Values {
	out := url.Values{}
	for name, vs := range values {
		ok := true
		for _, v := range vs {
			ok = ok && validate.Text(v) == ""
		}
		if ok {
			out[name] = vs
		}
	}
	return out
}

// Query is the common part of the request.
func (p *Parser) Query() list.Query { return p.q }

// Int64 reads an optional positive integer filter.
func (p *Parser) Int64(name string) *int64 {
	v := p.values.Get(name)
	if v == "" {
		return nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 1 {
		p.errs.Add(name, "must be a positive integer")
		return nil
	}
	return &n
}

// Enum reads an optional value that must be one of allowed.
func (p *Parser) Enum(name string, allowed ...string) string {
	v := p.values.Get(name)
	p.errs.OneOf(name, v, allowed...)
	if p.errs.Has(name) {
		return ""
	}
	return v
}

// EnumList reads a comma-separated list whose items must be in allowed.
func (p *Parser) EnumList(name string, allowed ...string) []string {
	v := p.values.Get(name)
	if v == "" {
		return nil
	}
	var out []string
	for _, item := range strings.Split(v, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		if !p.errs.OneOf(name, item, allowed...) {
			return nil
		}
		out = append(out, item)
	}
	return out
}

// String reads an optional free-text filter of at most 255 characters.
func (p *Parser) String(name string) string {
	v := strings.TrimSpace(p.values.Get(name))
	p.errs.MaxLen(name, v, validate.MaxString)
	return v
}

// Err returns an invalid-input fault naming every bad parameter, or nil.
func (p *Parser) Err() error { return p.errs.Err() }
