package webhooks

import (
	"context"
	"errors"
	"slices"
	"strconv"

	"github.com/opencrm/crm/pkg/contract/webhooksapi"
	"github.com/opencrm/crm/pkg/netguard"
	"github.com/opencrm/crm/pkg/validate"
)

// Limits of a subscription.
const (
	MaxURL         = 2048
	MaxDescription = 500
	MaxEvents      = 32
)

// URLPolicy is what a subscription URL may be (WEBHOOKS_ALLOW_HTTP,
// WEBHOOKS_BLOCK_PRIVATE, and the resolver tests replace).
type URLPolicy = netguard.URLPolicy

// Validate checks the body of a create or an update (each field sent
// replaces), create requiring url and events, and resolves the URL's host
// under p. Every bad field is reported at once. It sorts and dedupes the
// events, so in is a pointer.
func Validate(ctx context.Context, in *webhooksapi.WebhookInput, create bool, p URLPolicy) error {
	var errs validate.Errors
	switch {
	case in.URL == nil && create:
		errs.Add("url", "is required")
	case in.URL == nil:
	case *in.URL == "":
		errs.Add("url", "is required")
	case len(*in.URL) > MaxURL:
		errs.Add("url", "must be at most %d characters", MaxURL)
	case validate.Text(*in.URL) != "":
		errs.Add("url", "must be a valid URL")
	default:
		if _, err := netguard.CheckURL(ctx, *in.URL, p); err != nil {
			var ue *netguard.URLError
			if !errors.As(err, &ue) {
				return err
			}
			errs.Add("url", "%s", ue.Reason)
		}
	}
	switch {
	case in.Events == nil && create:
		errs.Add("events", "is required")
	case in.Events == nil:
	case len(*in.Events) == 0:
		errs.Add("events", "must name at least one event type")
	case len(*in.Events) > MaxEvents:
		errs.Add("events", "must name at most %d event types", MaxEvents)
	default:
		for i, t := range *in.Events {
			if !webhooksapi.ValidEventType(t) {
				errs.Add("events["+strconv.Itoa(i)+"]", "must be an event type (see the webhooks section) or \"*\"")
			}
		}
		if errs.Err() == nil {
			ev := slices.Clone(*in.Events)
			slices.Sort(ev)
			ev = slices.Compact(ev)
			*in.Events = ev
		}
	}
	if in.Description != nil {
		errs.MaxLen("description", *in.Description, MaxDescription)
	}
	return errs.Err()
}

// Unreadable returns the first type of events an owner holding scopes may
// not receive, and false when there is none. "*" always passes: it stands
// for the types the owner may read.
func Unreadable(events, scopes []string) (string, bool) {
	for _, t := range events {
		if t != webhooksapi.All && !MayRead(scopes, t) {
			return t, true
		}
	}
	return "", false
}
