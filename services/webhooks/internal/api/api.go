// Package api serves the webhooks context's HTTP routes: subscriptions,
// their delivery log, and the events feed. Every route needs an admin, or
// an integration token holding webhooks:read (reads) or webhooks:write.
//
// A subscription belongs to whoever created it: a token sees and manages
// only its own (another's id is 404, as if absent), an admin person every
// one. What a subscription receives, and what the feed shows, is limited
// to the event types whose records its owner may read (webhooks.ReadScope).
package api

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/opencrm/crm/pkg/auth"
	"github.com/opencrm/crm/pkg/contract/envelope"
	"github.com/opencrm/crm/pkg/contract/route"
	"github.com/opencrm/crm/pkg/contract/webhooksapi"
	"github.com/opencrm/crm/pkg/httpx"
	"github.com/opencrm/crm/pkg/list"
	"github.com/opencrm/crm/pkg/list/listparam"
	"github.com/opencrm/crm/pkg/problem"
	"github.com/opencrm/crm/pkg/validate"
	"github.com/opencrm/crm/services/webhooks/internal/store"
	"github.com/opencrm/crm/services/webhooks/internal/webhooks"
)

// Feed limits.
const (
	DefaultFeedLimit = 100
	MaxFeedLimit     = 1000
)

// maxBody bounds the JSON body of a create or an update: a valid one is a
// few kilobytes (MaxURL, MaxDescription, MaxEvents).
const maxBody = 64 << 10

// DefaultMaxPerOwner is how many subscriptions one owner may have unless
// Deps says otherwise (WEBHOOKS_MAX_PER_OWNER): each is a worker slot
// holder and a fan-out target, so a token cannot multiply its share.
const DefaultMaxPerOwner = 25

// Sealer seals signing secrets at rest.
type Sealer interface {
	Seal(plaintext []byte) ([]byte, error)
}

// Pinger is the delivery engine as the API uses it: Ping sends a ping now
// and returns its delivery id; Wake makes the dispatcher look for due
// deliveries at once (after a manual retry).
type Pinger interface {
	Ping(ctx context.Context, subID int64) (int64, error)
	Wake()
}

// Deps are the handlers' collaborators.
type Deps struct {
	Store    *store.Store
	Pinger   Pinger
	Sealer   Sealer
	Verifier *auth.Verifier
	// Policy is what a subscription URL may be.
	Policy webhooks.URLPolicy
	// Grace is how long the previous secret signs after a rotation.
	Grace time.Duration
	// MaxPerOwner caps the subscriptions of one owner (default
	// DefaultMaxPerOwner).
	MaxPerOwner int
	// InternalSecret guards the internal routes (a person's export and
	// erasure); without it they refuse every call.
	InternalSecret string
}

type handler struct{ Deps }

// New returns the routes of the webhooks service.
func New(d Deps) (http.Handler, error) {
	if d.Store == nil || d.Pinger == nil || d.Sealer == nil || d.Verifier == nil || d.Grace <= 0 {
		return nil, errors.New("api: every dependency is required")
	}
	if d.MaxPerOwner <= 0 {
		d.MaxPerOwner = DefaultMaxPerOwner
	}
	h := &handler{d}
	mux := http.NewServeMux()
	guards := httpx.Guards{route.Admin: d.Verifier.Require}
	// Each route's scope is its declaration's: webhooks:read for reads,
	// webhooks:write for the rest.
	mount := func(rt route.Route, fn httpx.HandlerFunc) { guards.Mount(mux, rt, h.guard(rt.Scope(), fn)) }
	mount(webhooksapi.ListWebhooks, h.list)
	mount(webhooksapi.CreateWebhook, h.create)
	mount(webhooksapi.GetWebhook, h.get)
	mount(webhooksapi.UpdateWebhook, h.update)
	mount(webhooksapi.DeleteWebhook, h.remove)
	mount(webhooksapi.RotateWebhookSecret, h.rotate)
	mount(webhooksapi.TestWebhook, h.test)
	mount(webhooksapi.ListDeliveries, h.deliveries)
	mount(webhooksapi.RetryDelivery, h.retry)
	mount(webhooksapi.ListEvents, h.feed)
	mountPrivacy(mux, d.Store, d.InternalSecret)
	return httpx.Routes(mux), nil
}

// guard lets a person with the admin role through, and an integration
// token holding scope (webhooks:write covers webhooks:read): the gateway
// checks the same, and the service checks again for a caller that reaches
// it directly.
func (h *handler) guard(scope string, fn httpx.HandlerFunc) httpx.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		c := auth.FromContext(r.Context())
		switch {
		case c == nil:
			return problem.Unauthenticated("missing bearer token")
		case c.Scoped():
			if !auth.GrantsScope(c.Scopes, scope) {
				return insufficientScope(scope)
			}
		case !c.IsAdmin():
			return problem.Forbidden("this action requires the admin role")
		}
		return fn(w, r)
	}
}

// insufficientScope is the RFC 6750 answer to a token lacking scope, as the
// gateway gives it.
func insufficientScope(scope string) *problem.Error {
	return &problem.Error{
		Status: http.StatusForbidden, Code: "insufficient_scope", Title: http.StatusText(http.StatusForbidden),
		Detail: "this access token lacks the " + scope + " scope",
		Header: http.Header{"Www-Authenticate": {`Bearer error="insufficient_scope", scope="` + scope + `"`}},
	}
}

// caller is who a request acts for, past the guard: a person with the
// admin role (every subscription, every event type), or an integration
// token's service user (its own subscriptions, the types its scopes read).
type caller struct {
	id    int64
	admin bool
	// scopes are the token's; nil for an admin person.
	scopes []string
}

func callerOf(r *http.Request) caller {
	c := auth.FromContext(r.Context())
	if !c.Scoped() {
		return caller{id: c.UserID(), admin: true}
	}
	return caller{id: c.UserID(), scopes: c.Scopes}
}

// owner is the owner a list is limited to: nil (every one) for an admin.
func (c caller) owner() *int64 {
	if c.admin {
		return nil
	}
	return &c.id
}

// find loads the subscription of the path's {id} the caller may manage:
// another owner's answers 404 to a token, exactly as a missing one, so a
// token learns nothing of the others.
func (h *handler) find(r *http.Request) (store.Subscription, error) {
	id, err := httpx.PathID(r, "id")
	if err != nil {
		return store.Subscription{}, err
	}
	sub, err := h.Store.Get(r.Context(), id)
	if err != nil {
		return sub, err
	}
	if c := callerOf(r); !c.admin && (sub.CreatedBy == nil || *sub.CreatedBy != c.id) {
		return store.Subscription{}, webhooks.ErrNotFound
	}
	return sub, nil
}

// checkEvents refuses event types the owner of a subscription may not
// read: 403 insufficient_scope naming the scope, the detail saying whose
// token lacks it when an admin edits a token's subscription.
func checkEvents(c caller, events, ownerScopes []string) error {
	t, bad := webhooks.Unreadable(events, ownerScopes)
	if !bad {
		return nil
	}
	e := insufficientScope(webhooks.ReadScope(t))
	if c.admin {
		e.Detail = "the access token owning this subscription lacks the " + webhooks.ReadScope(t) + " scope"
	}
	e.Detail += ", which " + t + " events need"
	return e
}

// The lists' parameters: sorted by creation unless asked.
var (
	subscriptionList = listparam.Options{Sorts: store.Sorts.Keys(), DefaultSort: "created_at"}
	deliveryList     = listparam.Options{Sorts: store.DeliverySorts.Keys(), DefaultSort: "id"}
)

// newestFirst makes q descending unless the request chose a direction.
func newestFirst(r *http.Request, q list.Query) list.Query {
	if r.URL.Query().Get("sort_dir") == "" {
		q.Desc = true
	}
	return q
}

func (h *handler) list(w http.ResponseWriter, r *http.Request) error {
	p := listparam.Parse(r.URL.Query(), subscriptionList)
	if err := p.Err(); err != nil {
		return err
	}
	f := webhooks.Filter{Query: newestFirst(r, p.Query()), Owner: callerOf(r).owner()}
	subs, total, err := h.Store.List(r.Context(), f)
	if err != nil {
		return err
	}
	httpx.JSON(w, http.StatusOK, envelope.NewPage(subs, f.Query, total))
	return nil
}

func (h *handler) create(w http.ResponseWriter, r *http.Request) error {
	var in webhooksapi.WebhookInput
	if err := httpx.Decode(w, r, &in, maxBody); err != nil {
		return err
	}
	if err := webhooks.Validate(r.Context(), &in, true, h.Policy); err != nil {
		return err
	}
	c := callerOf(r)
	if err := checkEvents(c, *in.Events, c.scopes); err != nil {
		return err
	}
	secret, fingerprint := webhooks.NewSecret()
	sealed, err := h.Sealer.Seal([]byte(secret))
	if err != nil {
		return err
	}
	n := store.NewSubscription{URL: *in.URL, Events: *in.Events, Active: true, Secret: sealed, Fingerprint: fingerprint,
		OwnerScopes: c.scopes}
	if in.Description != nil {
		n.Description = *in.Description
	}
	if in.Active != nil {
		n.Active = *in.Active
	}
	if c.id > 0 {
		n.CreatedBy = &c.id
	}
	sub, err := h.Store.Create(r.Context(), n, h.MaxPerOwner)
	if err != nil {
		return err
	}
	sub.Secret = secret
	w.Header().Set("Location", webhooksapi.GetWebhook.Location(sub.ID))
	httpx.Created(w, sub.Webhook, webhooksapi.CreateWebhook.Message)
	return nil
}

func (h *handler) get(w http.ResponseWriter, r *http.Request) error {
	sub, err := h.find(r)
	if err != nil {
		return err
	}
	httpx.OK(w, sub.Webhook)
	return nil
}

func (h *handler) update(w http.ResponseWriter, r *http.Request) error {
	cur, err := h.find(r)
	if err != nil {
		return err
	}
	var in webhooksapi.WebhookInput
	if err := httpx.Decode(w, r, &in, maxBody); err != nil {
		return err
	}
	if err := webhooks.Validate(r.Context(), &in, false, h.Policy); err != nil {
		return err
	}
	if in.Events != nil {
		// The owner's scopes, not the caller's: an admin cannot widen a
		// token's subscription beyond what the token may read.
		if err := checkEvents(callerOf(r), *in.Events, cur.OwnerScopes); err != nil {
			return err
		}
	}
	sub, err := h.Store.Update(r.Context(), cur, in)
	if err != nil {
		return err
	}
	httpx.Updated(w, sub.Webhook, webhooksapi.UpdateWebhook.Message)
	return nil
}

func (h *handler) remove(w http.ResponseWriter, r *http.Request) error {
	sub, err := h.find(r)
	if err != nil {
		return err
	}
	if err := h.Store.Delete(r.Context(), sub.ID); err != nil {
		return err
	}
	httpx.Deleted(w, webhooksapi.DeleteWebhook.Message)
	return nil
}

func (h *handler) rotate(w http.ResponseWriter, r *http.Request) error {
	cur, err := h.find(r)
	if err != nil {
		return err
	}
	secret, fingerprint := webhooks.NewSecret()
	sealed, err := h.Sealer.Seal([]byte(secret))
	if err != nil {
		return err
	}
	sub, err := h.Store.Rotate(r.Context(), cur.ID, sealed, fingerprint, h.Grace)
	if err != nil {
		return err
	}
	sub.Secret = secret
	httpx.Updated(w, sub.Webhook, webhooksapi.RotateWebhookSecret.Message)
	return nil
}

func (h *handler) test(w http.ResponseWriter, r *http.Request) error {
	sub, err := h.find(r)
	if err != nil {
		return err
	}
	did, err := h.Pinger.Ping(r.Context(), sub.ID)
	if err != nil {
		return err
	}
	d, err := h.Store.Delivery(r.Context(), sub.ID, did)
	if err != nil {
		return err
	}
	httpx.OK(w, d)
	return nil
}

func (h *handler) deliveries(w http.ResponseWriter, r *http.Request) error {
	sub, err := h.find(r)
	if err != nil {
		return err
	}
	p := listparam.Parse(r.URL.Query(), deliveryList)
	status := p.Enum("status", webhooks.Statuses...)
	if err := p.Err(); err != nil {
		return err
	}
	f := webhooks.DeliveryFilter{Query: newestFirst(r, p.Query()), Status: status}
	ds, total, err := h.Store.Deliveries(r.Context(), sub.ID, f)
	if err != nil {
		return err
	}
	httpx.JSON(w, http.StatusOK, envelope.NewPage(ds, f.Query, total))
	return nil
}

func (h *handler) retry(w http.ResponseWriter, r *http.Request) error {
	sub, err := h.find(r)
	if err != nil {
		return err
	}
	id := sub.ID
	did, err := httpx.PathID(r, "deliveryId")
	if err != nil {
		return err
	}
	d, err := h.Store.Retry(r.Context(), id, did)
	if err != nil {
		return err
	}
	h.Pinger.Wake()
	httpx.Updated(w, d, webhooksapi.RetryDelivery.Message)
	return nil
}

// feed answers webhooksapi.ListEvents: ?after= (a cursor), ?type= and
// ?limit=.
func (h *handler) feed(w http.ResponseWriter, r *http.Request) error {
	v := r.URL.Query()
	var errs validate.Errors
	var after int64
	var afterID *string
	if a := v.Get("after"); a != "" {
		seq, ok := webhooks.ParseEventID(a)
		if !ok {
			errs.Add("after", "must be an event id (evt_ and a number)")
		}
		after, afterID = seq, &a
	}
	var types []string
	if t := v.Get("type"); t != "" {
		for _, x := range strings.Split(t, ",") {
			x = strings.TrimSpace(x)
			if x == "" {
				continue
			}
			if x == webhooksapi.All || !webhooksapi.ValidEventType(x) {
				errs.Add("type", "must be event types separated by commas (see the webhooks section)")
				break
			}
			types = append(types, x)
		}
	}
	limit := DefaultFeedLimit
	if l := v.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 || n > MaxFeedLimit {
			errs.Add("limit", "must be a whole number from 1 to %d", MaxFeedLimit)
		}
		limit = n
	}
	if err := errs.Err(); err != nil {
		return err
	}
	// A token reads only the types its scopes allow: asking for another is
	// refused, asking for none gives those it may read.
	if c := callerOf(r); !c.admin {
		if err := checkEvents(c, types, c.scopes); err != nil {
			return err
		}
		if types == nil {
			types = webhooks.Readable(c.scopes)
		}
	}
	evs, more, err := h.Store.Feed(r.Context(), after, types, limit)
	if err != nil {
		return err
	}
	f := webhooksapi.EventFeed{Success: true, Data: evs, HasMore: more, NextAfter: afterID}
	if f.Data == nil {
		f.Data = []webhooks.Event{}
	}
	if n := len(evs); n > 0 {
		f.NextAfter = &evs[n-1].ID
	}
	httpx.JSON(w, http.StatusOK, f)
	return nil
}
