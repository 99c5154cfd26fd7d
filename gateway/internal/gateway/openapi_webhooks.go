package gateway

import (
	"strings"

	"github.com/opencrm/crm/pkg/contract/webhooksapi"
)

// adminOrScope describes Admin routes that name a Resource; it is not a
// routing policy (Route.Policy stays Admin), only a documentation key.
const adminOrScope Policy = -1

// adminByScope reports an Admin operation that an integration token may
// call with its resource scope instead of the admin role.
func adminByScope(op Operation) bool {
	rt := Match(Table, op.Method, op.Path)
	return rt != nil && rt.Policy == Admin && rt.Resource != ""
}

// webhookItems is the document's webhooks section: one entry per event
// type, describing the POST a subscription receives, its headers and the
// body's schema (reflected from webhooksapi), so a receiver can be
// generated like a client.
func webhookItems(set *schemaSet) obj {
	header := func(name, desc string) obj {
		return obj{"name": name, "in": "header", "required": true, "description": desc, "schema": obj{"type": "string"}}
	}
	params := []obj{
		header(webhooksapi.HeaderID, "The event id (evt_...), the same on every attempt: drop a repeat you have already handled."),
		header(webhooksapi.HeaderTimestamp, "Unix seconds of this attempt; refuse one too far from your clock (replays)."),
		header(webhooksapi.HeaderSignature, "Space-separated v1,<base64 HMAC-SHA256 of id.timestamp.body> under each valid secret "+
			"(two during the 24 h after a rotation): accept if one matches."),
	}
	items := obj{}
	for _, typ := range append(append([]string{}, webhooksapi.EventTypes...), webhooksapi.Ping) {
		record, _, _ := strings.Cut(typ, ".")
		summary := "A " + strings.ReplaceAll(typ, ".", " ") + " event"
		sentTo := "Sent to every active subscription listing " + typ + " (or *) in its events. "
		if typ == webhooksapi.Ping {
			summary, sentTo = "A ping", "Sent by POST /webhooks/{id}/test only, once, not retried. "
		}
		items[typ] = obj{"post": obj{
			"tags":        []string{"Webhooks"},
			"operationId": "webhook_" + strings.NewReplacer(".", "_").Replace(typ),
			"summary":     summary,
			// The receiver authenticates the platform by the signature.
			"security": []obj{},
			"description": sentTo +
				"Answer 2xx within 10 s; anything else (or no answer) is retried with growing back-off for 3 days, " +
				"in event order per " + record + ". 410 Gone deactivates the subscription. Redirects are not followed.",
			"parameters": params,
			"requestBody": obj{"required": true, "content": obj{"application/json": obj{
				"schema": set.ref(webhooksapi.Payload(typ))}}},
			"responses": obj{
				"2XX":     obj{"description": "Received; the delivery is done."},
				"410":     obj{"description": "Gone: the subscription is deactivated, nothing more is sent."},
				"default": obj{"description": "Any other answer: the delivery is retried."},
			},
		}}
	}
	return items
}
