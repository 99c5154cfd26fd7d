package store

import (
	"context"
	"net/url"
	"slices"
	"strconv"

	"github.com/opencrm/crm/pkg/audit"
	"github.com/opencrm/crm/pkg/db"
)

// Context is the name the webhooks context's audit entries carry.
const Context = "webhooks"

// auditURL is a subscription's URL as the audit log keeps it: without
// user information, query and fragment, where a receiver's credentials
// may sit.
func auditURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	u.User, u.RawQuery, u.ForceQuery, u.Fragment, u.RawFragment = nil, "", false, "", ""
	return u.String()
}

// record writes a subscription change's audit entry with q, the change's
// transaction.
func record(ctx context.Context, q db.Querier, action string, id int64, details map[string]any) error {
	return audit.Record(ctx, q, Context, audit.Entry{Action: action, Object: "webhook", ID: strconv.FormatInt(id, 10),
		Details: details})
}

// subscribed is what webhook.created and webhook.deleted record.
func subscribed(w Subscription) map[string]any {
	return map[string]any{"url": auditURL(w.URL), "events": w.Events, "description": w.Description, "active": w.Active,
		"owner": w.CreatedBy}
}

// subscriptionChanges are the fields an update changed, from and to.
func subscriptionChanges(old, w Subscription) []map[string]any {
	out := []map[string]any{}
	add := func(field string, from, to any, same bool) {
		if !same {
			out = append(out, map[string]any{"field": field, "from": from, "to": to})
		}
	}
	add("url", auditURL(old.URL), auditURL(w.URL), old.URL == w.URL)
	add("events", old.Events, w.Events, slices.Equal(old.Events, w.Events))
	add("description", old.Description, w.Description, old.Description == w.Description)
	add("active", old.Active, w.Active, old.Active == w.Active)
	return out
}
