package api

import (
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"time"

	"github.com/opencrm/crm/pkg/audit"
	"github.com/opencrm/crm/pkg/contract/identityapi"
	"github.com/opencrm/crm/pkg/httpx"
	"github.com/opencrm/crm/pkg/validate"
	"github.com/opencrm/crm/services/identity/internal/identity"
)

// defaultAuditPerPage is an audit page's size without per_page.
const defaultAuditPerPage = 25

// withClient gives every request's audit entries the client's address
// (as the login throttle resolves it: X-Forwarded-For believed from
// trusted proxies only) and user agent.
func (a *API) withClient(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := audit.WithClient(r.Context(), audit.Client{IP: a.proxies.Of(r), UserAgent: r.UserAgent()})
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// parseAuditQuery reads ListAuditLog's parameters; each one wrong is a
// 422 naming it. A page is not capped silently (per_page above 100 is
// refused): its cursor walks the whole log anyway.
func parseAuditQuery(v url.Values) (identity.AuditFilter, error) {
	f := identity.AuditFilter{PerPage: defaultAuditPerPage}
	var errs validate.Errors
	id := func(name string) *int64 {
		s := v.Get(name)
		if s == "" {
			return nil
		}
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < 1 {
			return nil
		}
		return &n
	}
	if f.Actor = id("actor"); f.Actor == nil && v.Get("actor") != "" {
		errs.Add("actor", "must be a user id (a positive integer)")
	}
	if s := v.Get("action"); s != "" {
		if !slices.Contains(identityapi.AuditActions, s) {
			errs.Add("action", "must be one of the audit actions (login.succeeded, login.failed, ...; see the API reference)")
		} else {
			f.Action = s
		}
	}
	at := func(name string) *time.Time {
		s := v.Get(name)
		if s == "" {
			return nil
		}
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			errs.Add(name, "must be an RFC 3339 time such as 2024-05-01T00:00:00Z")
			return nil
		}
		return &t
	}
	f.From, f.To = at("from"), at("to")
	if f.From != nil && f.To != nil && f.From.After(*f.To) {
		errs.Add("from", "must not be after to")
	}
	if f.After = id("after"); f.After == nil && v.Get("after") != "" {
		errs.Add("after", "must be an entry id (the next_after of a page)")
	}
	if s := v.Get("per_page"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > identityapi.AuditMaxPerPage {
			errs.Add("per_page", "must be an integer between 1 and %d", identityapi.AuditMaxPerPage)
		} else {
			f.PerPage = n
		}
	}
	return f, errs.Err()
}

func (a *API) listAuditLog(w http.ResponseWriter, r *http.Request) error {
	f, err := parseAuditQuery(r.URL.Query())
	if err != nil {
		return err
	}
	entries, more, err := a.svc.AuditLog(r.Context(), f)
	if err != nil {
		return err
	}
	page := identityapi.AuditPage{Success: true, Data: entries, HasMore: more}
	if n := len(entries); n > 0 {
		page.NextAfter = &entries[n-1].ID
	}
	httpx.JSON(w, http.StatusOK, page)
	return nil
}

func (a *API) verifyAuditLog(w http.ResponseWriter, r *http.Request) error {
	v, err := a.svc.VerifyAuditLog(r.Context())
	if err != nil {
		return err
	}
	httpx.OK(w, v)
	return nil
}
