// Package api serves intake's HTTP routes: the public submission endpoint
// (API key) and the admin view of the submission log (JWT, admin role).
package api

import (
	"encoding/json"
	"errors"
	"log/slog"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/opencrm/crm/pkg/auth"
	"github.com/opencrm/crm/pkg/contract/envelope"
	"github.com/opencrm/crm/pkg/contract/identityapi"
	"github.com/opencrm/crm/pkg/contract/intakeapi"
	"github.com/opencrm/crm/pkg/contract/leadsapi"
	"github.com/opencrm/crm/pkg/contract/route"
	"github.com/opencrm/crm/pkg/httpx"
	"github.com/opencrm/crm/pkg/idempotency"
	"github.com/opencrm/crm/pkg/list/listparam"
	"github.com/opencrm/crm/pkg/problem"
	"github.com/opencrm/crm/pkg/validate"
	"github.com/opencrm/crm/services/intake/internal/apikey"
	"github.com/opencrm/crm/services/intake/internal/intake"
)

// KeyHeader carries the API key on the public route.
const KeyHeader = "X-API-Key"

// Deps are the handlers' collaborators.
type Deps struct {
	Service  *intake.Service
	Store    intake.Store
	Keys     intake.Keys
	Limiter  intake.Limiter
	Verifier *auth.Verifier
	// CORSOrigins are allowed for every key (CRM_CORS_ORIGINS); "*" allows any.
	CORSOrigins []string
	Log         *slog.Logger
	// Privacy is intake's part of privacy requests (internal routes).
	Privacy Privacy
}

type handler struct{ Deps }

// New returns the routes of the intake service.
func New(d Deps) (http.Handler, error) {
	if d.Service == nil || d.Store == nil || d.Keys == nil || d.Limiter == nil || d.Verifier == nil || d.Log == nil {
		return nil, errors.New("api: every dependency is required")
	}
	h := &handler{d}
	mux := http.NewServeMux()
	guards := httpx.Guards{
		// The API key is checked by submit itself: it answers the key's
		// own CORS and rate-limit headers around the check.
		route.Key:   func(next http.Handler) http.Handler { return next },
		route.Admin: func(next http.Handler) http.Handler { return d.Verifier.Require(auth.RequireAdmin(next)) },
	}
	guards.Mount(mux, intakeapi.SubmitLead, httpx.HandlerFunc(h.submit))
	// The browser's preflight of the same path; it carries no credential.
	mux.Handle(http.MethodOptions+" "+intakeapi.SubmitLead.Path, httpx.HandlerFunc(h.preflight))
	guards.Mount(mux, intakeapi.ListSubmissions, httpx.HandlerFunc(h.list))
	guards.Mount(mux, intakeapi.GetSubmission, httpx.HandlerFunc(h.get))
	if err := mountPrivacy(mux, d.Privacy); err != nil {
		return nil, err
	}
	return httpx.Routes(mux), nil
}

// maxOrigin bounds the Origin header kept with a submission.
const maxOrigin = 255

// submit is intakeapi.SubmitLead.
func (h *handler) submit(w http.ResponseWriter, r *http.Request) error {
	origin := r.Header.Get("Origin")
	setCORS(w, origin)
	// The public route takes an API key and nothing else: a bearer token
	// here is a client mistake, and accepting it would blur two trust models.
	if r.Header.Get("Authorization") != "" {
		return keyRefused("this endpoint takes an X-API-Key header, not a bearer token")
	}
	secret := r.Header.Get(KeyHeader)
	if secret == "" {
		return keyRefused("the X-API-Key header is required")
	}
	key, err := h.Keys.Verify(r.Context(), secret)
	if errors.Is(err, apikey.ErrUnknown) {
		return keyRefused(apikey.ErrUnknown.Detail)
	}
	if err != nil {
		return err
	}
	if validate.Text(origin) != "" || len(origin) > maxOrigin {
		// Stored with the submission, so it must be text PostgreSQL takes.
		clearCORS(w)
		return problem.Invalid("Origin", "must be a web origin (scheme://host[:port])")
	}
	if origin != "" && !originAllowed(origin, h.CORSOrigins, key.AllowedOrigins) {
		// Refused before anything is stored: a browser form on a site the
		// key does not name must not create leads even though the request
		// reached us (the preflight cannot know the key).
		clearCORS(w)
		return problem.Forbidden("this API key does not accept submissions from origin " + origin)
	}
	quota, err := h.Limiter.Take(r.Context(), key.ID, key.Limit())
	if err != nil {
		// Fail open: losing leads because Redis hiccupped is worse than a
		// minute without a quota (the gateway limits too).
		h.Log.WarnContext(r.Context(), "rate limiter unavailable; request not counted", "error", err.Error())
	} else {
		setQuota(w, quota)
		if !quota.Allowed {
			return problem.RateLimited(seconds(quota.Reset))
		}
	}
	idemKey, err := idempotency.Key(r)
	if err != nil {
		return err
	}
	var in intake.Input
	if err := httpx.Decode(w, r, &in, intake.MaxBody); err != nil {
		return err
	}
	intake.Normalize(&in)
	if err := intake.Validate(in); err != nil {
		return err
	}
	// Which record the address repeats is asked beside the forwarding,
	// where the installation reports it (never for a honeypot hit, which
	// goes nowhere).
	var dup <-chan *leadsapi.DuplicateOf
	if h.Service.ReportsDuplicates() && !intake.IsSpam(in) {
		dup = h.Service.LookupDuplicate(r.Context(), in.Email)
	}
	receipt, err := h.Service.Submit(r.Context(), key, in, origin, idemKey)
	if err != nil {
		return err
	}
	var found *leadsapi.DuplicateOf
	if dup != nil && receipt.Refusal == nil {
		found = h.Service.DuplicateOf(r.Context(), dup, receipt)
	}
	status, body, err := answer(receipt, found, problem.RequestID(r.Context()))
	if err != nil {
		return err
	}
	if status == http.StatusCreated {
		// The lead lives in leads; a honeypot hit names its submission as
		// a lead all the same, as every 201 names what it created.
		w.Header().Set("Location", leadsapi.GetLead.Location(receipt.LeadID))
	}
	ct := "application/json"
	if receipt.Refusal != nil {
		ct = problem.ContentType
	}
	w.Header().Set("Content-Type", ct)
	idempotency.MarkReplayed(w, receipt.Replayed)
	w.WriteHeader(status)
	_, _ = w.Write(body)
	return nil
}

// Answer messages (the envelope of docs/api.md). A honeypot hit answers
// exactly like a created lead, so a bot cannot tell it was caught.
const (
	msgCreated = "Lead created successfully"
	msgQueued  = "Lead accepted; it will be created as soon as the leads service is available"
)

// answer is the public answer to a receipt: 201 with the lead's id, 202
// with the waiting submission's id (and a null lead id), each with
// duplicate_of when dup names the record the address repeats, or leads'
// refusal as problem+json.
func answer(r intake.Receipt, dup *leadsapi.DuplicateOf, requestID string) (int, []byte, error) {
	var dupOf *intakeapi.SubmissionDuplicate
	if dup != nil {
		dupOf = &intakeapi.SubmissionDuplicate{ContactID: dup.ContactID, LeadID: dup.LeadID}
	}
	var status int
	var v any
	switch {
	case r.Refusal != nil:
		p := problem.From(r.Refusal)
		status, v = p.Status, problem.BodyOf(p, requestID)
	case r.QueuedID != 0:
		status, v = http.StatusAccepted, intakeapi.SubmissionAnswer{Success: true, Message: msgQueued,
			Data: intakeapi.SubmissionRef{SubmissionID: r.QueuedID, DuplicateOf: dupOf}}
	default:
		id := r.LeadID
		status, v = http.StatusCreated, intakeapi.SubmissionAnswer{Success: true, Message: msgCreated,
			Data: intakeapi.SubmissionRef{ID: &id, DuplicateOf: dupOf}}
	}
	body, err := json.Marshal(v)
	return status, body, err
}

// keyRefused is the 401 for a missing, unknown or revoked key, with the
// gateway's API-key challenge.
func keyRefused(detail string) *problem.Error {
	e := problem.Unauthenticated(detail)
	e.Header = http.Header{"Www-Authenticate": {identityapi.KeyChallenge}}
	return e
}

func seconds(d time.Duration) int {
	s := int(math.Ceil(d.Seconds()))
	if s < 1 {
		s = 1
	}
	return s
}

// setQuota writes the IETF RateLimit headers (limit, remaining, seconds to reset).
func setQuota(w http.ResponseWriter, q intake.Quota) {
	h := w.Header()
	h.Set("RateLimit-Limit", strconv.Itoa(q.Limit))
	h.Set("RateLimit-Remaining", strconv.Itoa(q.Remaining))
	h.Set("RateLimit-Reset", strconv.Itoa(seconds(q.Reset)))
}

// CORS for browser forms.
const (
	corsMethods = "POST, OPTIONS"
	corsHeaders = "Content-Type, X-API-Key, Idempotency-Key, X-Request-Id"
	corsExpose  = "RateLimit-Limit, RateLimit-Remaining, RateLimit-Reset, Retry-After, X-Request-Id, Idempotent-Replayed"
	corsMaxAge  = "600"
)

// preflight is the OPTIONS of intakeapi.SubmitLead. A preflight carries no API key, so
// it cannot know the key's allowed origins: it allows the request shape
// for any origin, and the real request is checked against the key.
func (h *handler) preflight(w http.ResponseWriter, r *http.Request) error {
	origin := r.Header.Get("Origin")
	w.Header().Set("Allow", corsMethods)
	w.Header().Add("Vary", "Origin")
	w.Header().Add("Vary", "Access-Control-Request-Method")
	w.Header().Add("Vary", "Access-Control-Request-Headers")
	if origin != "" && strings.EqualFold(r.Header.Get("Access-Control-Request-Method"), http.MethodPost) {
		hd := w.Header()
		hd.Set("Access-Control-Allow-Origin", origin)
		hd.Set("Access-Control-Allow-Methods", corsMethods)
		hd.Set("Access-Control-Allow-Headers", corsHeaders)
		hd.Set("Access-Control-Max-Age", corsMaxAge)
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func setCORS(w http.ResponseWriter, origin string) {
	w.Header().Add("Vary", "Origin")
	if origin == "" {
		return
	}
	w.Header().Set("Access-Control-Allow-Origin", origin)
	w.Header().Set("Access-Control-Expose-Headers", corsExpose)
}

func clearCORS(w http.ResponseWriter) {
	w.Header().Del("Access-Control-Allow-Origin")
	w.Header().Del("Access-Control-Expose-Headers")
}

// originAllowed applies the key's allowed origins plus the global list.
// With neither configured any origin may post: the key itself is the
// credential, and it is public in the form's page anyway.
func originAllowed(origin string, global, perKey []string) bool {
	if len(global) == 0 && len(perKey) == 0 {
		return true
	}
	origin = normOrigin(origin)
	for _, list := range [][]string{global, perKey} {
		for _, o := range list {
			if o == "*" || normOrigin(o) == origin {
				return true
			}
		}
	}
	return false
}

func normOrigin(o string) string {
	return strings.ToLower(strings.TrimRight(strings.TrimSpace(o), "/"))
}

// list is intakeapi.ListSubmissions (admin).
func (h *handler) list(w http.ResponseWriter, r *http.Request) error {
	p := listparam.Parse(r.URL.Query(), listparam.Options{Sorts: intake.SortKeys, DefaultSort: intake.DefaultSort})
	f := intake.Filter{Status: p.Enum("status", intake.Statuses...), APIKeyID: p.Int64("api_key_id")}
	f.Query = p.Query()
	if err := p.Err(); err != nil {
		return err
	}
	subs, total, err := h.Store.List(r.Context(), f)
	if err != nil {
		return err
	}
	httpx.JSON(w, http.StatusOK, envelope.NewPage(subs, f.Query, total))
	return nil
}

// get is intakeapi.GetSubmission (admin).
func (h *handler) get(w http.ResponseWriter, r *http.Request) error {
	id, err := httpx.PathID(r, "id")
	if err != nil {
		return err
	}
	s, err := h.Store.Get(r.Context(), id)
	if err != nil {
		return err
	}
	httpx.OK(w, s)
	return nil
}
