package gateway

import (
	"reflect"
	"strings"

	"github.com/opencrm/crm/pkg/contract/webhooksapi"
)

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
	// A ping is no change, so the events feed never carries it and no path
	// reaches its schema: it is described in place, because generators
	// that drop the components no path uses (oapi-codegen's default) would
	// otherwise leave its body undefined.
	ping := set.inline(webhooksapi.Payload(webhooksapi.Ping))
	ping["properties"].(obj)["type"].(obj)["enum"] = []string{webhooksapi.Ping}
	for _, typ := range append(append([]string{}, webhooksapi.EventTypes...), webhooksapi.Ping) {
		record, _, _ := strings.Cut(typ, ".")
		summary := "A " + strings.ReplaceAll(typ, ".", " ") + " event"
		sentTo := "Sent to every active subscription listing " + typ + " (or *) in its events. "
		body := ping
		if typ == webhooksapi.Ping {
			summary, sentTo = "A ping", "Sent by POST /webhooks/{id}/test only, once, not retried. "
		} else {
			body = set.ref(webhooksapi.Payload(typ))
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
				"schema": body}}},
			"responses": obj{
				"2XX":     obj{"description": "Received; the delivery is done."},
				"410":     obj{"description": "Gone: the subscription is deactivated, nothing more is sent."},
				"default": obj{"description": "Any other answer: the delivery is retried."},
			},
		}}
	}
	return items
}

// typeEvents makes Event, the item of the events feed, the union of the
// typed event bodies the webhooks section names, told apart by type (a
// discriminator mapping each event type to its body), and gives each body's
// type the event types it is sent for. So a generated client decodes the
// feed into the same types a receiver decodes deliveries into, and every
// event schema is reachable from a path.
func typeEvents(schemas obj) {
	mapping := obj{}
	var variants []obj
	types := map[string][]string{}
	for _, typ := range webhooksapi.EventTypes {
		name := defName(reflect.TypeOf(webhooksapi.Payload(typ)), "")
		ref := "#/components/schemas/" + name
		if types[name] == nil {
			variants = append(variants, obj{"$ref": ref})
		}
		types[name] = append(types[name], typ)
		mapping[typ] = ref
	}
	for name, list := range types {
		props := schemas[name].(obj)["properties"].(obj)
		props["type"].(obj)["enum"] = toJSON(list)
		// After a person's erasure the feed keeps their events with every
		// value but ids and timestamps replaced by "[erased]".
		if data, ok := props["data"]; ok {
			props["data"] = obj{"anyOf": []any{data, obj{"$ref": "#/components/schemas/ErasedData"}}}
		}
	}
	schemas["ErasedData"] = obj{"type": "object",
		// Ids (integers), timestamps, nulls, nested objects and arrays
		// stay; every other value is the marker.
		// One type per alternative: generators (oapi-codegen) take no list
		// of types.
		"additionalProperties": obj{"anyOf": []any{obj{"const": "[erased]"}, obj{"type": "integer"}, obj{"type": "object"},
			obj{"type": "array", "items": obj{}}, obj{"type": "null"}, obj{"type": "string", "format": "date-time"}}},
		"description": "An event about a person who was erased (POST /privacy/erasures): the record's fields, every value but ids, timestamps and nulls replaced by \"[erased]\" (objects and arrays keep their shape)."}
	schemas["Event"] = obj{
		"description":   "One change: the body a webhook delivery of its type carries (see the webhooks section), told apart by type.",
		"oneOf":         variants,
		"discriminator": obj{"propertyName": "type", "mapping": mapping},
	}
}
