// Package audit records an entry of the audit log from any context: Record
// writes it into the calling context's outbox, on identityapi.AuditStream,
// in the caller's transaction, so the entry exists exactly when the action
// committed. Identity, which keeps the log, consumes the stream and
// appends each entry once (its source is unique). The stream is not one of
// the crm:events:* streams, so no entry reaches the webhooks or the events
// feed. Identity's own actions append to the log directly.
package audit

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/opencrm/crm/pkg/contract/historyapi"
	"github.com/opencrm/crm/pkg/contract/identityapi"
	"github.com/opencrm/crm/pkg/db"
	"github.com/opencrm/crm/pkg/history"
	"github.com/opencrm/crm/pkg/outbox"
	"github.com/opencrm/crm/pkg/problem"
)

// Entry is what a context records: the action (one of
// identityapi.AuditActions), what it was done to, and its details (any
// value encoding to a JSON object: the filters and row count of an export,
// the fields of a definition). Who acted and the request come from ctx.
type Entry struct {
	Action string
	// Object and ID name the target ("contact", "42"); both empty for none.
	Object, ID string
	Details    any
}

// Client is the caller's address and user agent, as the context saw them.
type Client struct {
	IP, UserAgent string
}

type clientKey struct{}

// WithClient makes c the client of ctx's entries.
func WithClient(ctx context.Context, c Client) context.Context {
	return context.WithValue(ctx, clientKey{}, c)
}

// ClientOf is the client WithClient set (zero when none).
func ClientOf(ctx context.Context) Client {
	c, _ := ctx.Value(clientKey{}).(Client)
	return c
}

// ActorOf is who ctx acts for, as the audit log names it: the actor of
// record history (the caller, or the one history.WithActor set), else the
// system.
func ActorOf(ctx context.Context) identityapi.AuditActor {
	a, ok := history.ActorOf(ctx)
	if !ok {
		return identityapi.AuditActor{Type: historyapi.ActorSystem}
	}
	return identityapi.AuditActor{Type: a.Type, ID: a.ID, Name: a.Name}
}

// Message is the message Record sends for e, stamped now with ctx's actor,
// client and request id and a fresh source id.
func Message(ctx context.Context, context string, e Entry) (identityapi.AuditMessage, error) {
	m := identityapi.AuditMessage{
		Context: context, Source: uuid.NewString(), At: time.Now().UTC().Truncate(time.Microsecond),
		Actor: ActorOf(ctx), Action: e.Action, RequestID: problem.RequestID(ctx),
	}
	if e.Object != "" || e.ID != "" {
		m.Target = &identityapi.AuditTarget{Object: e.Object, ID: e.ID}
	}
	c := ClientOf(ctx)
	m.IP, m.UserAgent = c.IP, c.UserAgent
	if e.Details != nil {
		raw, err := json.Marshal(e.Details)
		if err != nil {
			return m, fmt.Errorf("audit: encode %s details: %w", e.Action, err)
		}
		if len(raw) == 0 || raw[0] != '{' {
			return m, fmt.Errorf("audit: %s details must be a JSON object, not %.20s", e.Action, raw)
		}
		m.Details = raw
	}
	return m, nil
}

// Record writes e into the outbox of context (its name: "contacts") with
// q, the transaction of the action, on identityapi.AuditStream. The
// context's outbox relay publishes it; identity appends it to the log.
func Record(ctx context.Context, q db.Querier, context string, e Entry) error {
	m, err := Message(ctx, context, e)
	if err != nil {
		return err
	}
	return outbox.Add(ctx, q, identityapi.AuditStream, identityapi.AuditEventType, m.Source, m)
}

// Filters are a request's query parameters as an entry's details record
// them (an export's filters): a parameter given once as its value, one
// given more often as the list. The audit log keeps no personal data of
// the people in the CRM, and the audit log is never erased: a value that
// could be some of it (a search, a name, an address, a custom field's
// text, a number that may be a phone) is replaced by its kind, "text";
// ids, page numbers, dates, booleans and the values of the parameters
// that only name a choice (status, source, sort, scope) are kept.
func Filters(v url.Values) map[string]any {
	out := map[string]any{}
	for k, vs := range v {
		kept := make([]string, len(vs))
		for i, x := range vs {
			kept[i] = filterValue(k, x)
		}
		if len(kept) == 1 {
			out[k] = kept[0]
		} else {
			out[k] = kept
		}
	}
	return out
}

// choices are the query parameters whose values only name a choice the
// API offers.
var choices = map[string]bool{"status": true, "source": true, "sort_by": true, "sort_order": true,
	"sort_dir": true, "order": true, "scope": true, "format": true, "include": true, "id_property": true}

// counters are the parameters other than ids (…_id) whose numbers are
// no one's data; a number elsewhere (a search for a phone number) is.
var counters = map[string]bool{"assigned_to": true, "page": true, "per_page": true, "after": true, "limit": true}

// TextKind is what Filters records in place of a value that may be
// personal data.
const TextKind = "text"

func filterValue(key, v string) string {
	if choices[key] {
		return v
	}
	if _, err := strconv.ParseInt(v, 10, 64); err == nil && (counters[key] || strings.HasSuffix(key, "_id")) {
		return v
	}
	if _, err := strconv.ParseBool(v); err == nil {
		return v
	}
	for _, layout := range []string{time.DateOnly, time.RFC3339, time.RFC3339Nano} {
		if _, err := time.Parse(layout, v); err == nil {
			return v
		}
	}
	return TextKind
}
