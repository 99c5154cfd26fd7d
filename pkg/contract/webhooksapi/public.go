package webhooksapi

import (
	"encoding/json"

	"github.com/opencrm/crm/pkg/timestamp"
)

// Webhook is a subscription: where to POST, and which events. secret is
// present only in the answers to create and rotate-secret. A subscription
// belongs to whoever created it (created_by): an integration token sees
// and manages only its own, a person with the admin role all of them.
type Webhook struct {
	ID                      int64           `json:"id" minimum:"1" example:"4"`
	URL                     string          `json:"url" format:"uri" maxLength:"2048" example:"https://hooks.example.com/crm"`
	Events                  []string        `json:"events" nullable:"false" minItems:"1" description:"Event types delivered (see the webhooks section), or \"*\" for all." example:"[\"contact.created\",\"deal.updated\"]"`
	Description             string          `json:"description" maxLength:"500" example:"billing sync"`
	Active                  bool            `json:"active" description:"Inactive subscriptions receive nothing; a receiver answering 410 Gone makes its subscription inactive." example:"true"`
	DisabledReason          *string         `json:"disabled_reason" description:"Why the platform deactivated it (a 410 from the receiver, or its owner lost access: the access token was revoked, the user deactivated or no longer an admin); null when active or deactivated by a user." example:"receiver answered 410 Gone"`
	SecretPrefix            string          `json:"secret_prefix" deprecated:"true" sunset:"2027-09-01" description:"Deprecated: always \"whsec_\" (the scheme of every signing secret); it showed the secret's first characters, which are key material. Use secret_fingerprint to tell secrets apart." example:"whsec_"`
	SecretFingerprint       *string         `json:"secret_fingerprint" description:"The first 16 hex digits of the SHA-256 of the current signing secret (the whole whsec_... string), to tell secrets apart without showing any of the key. null for a subscription made by an older version until the service has computed it (at start-up, then hourly)." example:"3f1b9c0e7d2a4b56"`
	PreviousSecretExpiresAt *timestamp.Time `json:"previous_secret_expires_at" description:"Until then, deliveries are signed with the previous secret too (after a rotation)."`
	CreatedBy               *int64          `json:"created_by" minimum:"1" description:"The owner: the user, or the service user of the integration token, that created it."`
	CreatedAt               timestamp.Time  `json:"created_at"`
	UpdatedAt               timestamp.Time  `json:"updated_at"`
	Secret                  string          `json:"secret,omitempty" readOnly:"true" description:"The signing secret (whsec_ and base64 of 32 random bytes); returned once, on create and on rotate-secret." example:"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"`
}

// WebhookInput is the body of CreateWebhook (url and events required) and
// UpdateWebhook (each field optional; what is sent replaces).
type WebhookInput struct {
	URL         *string   `json:"url,omitempty" format:"uri" minLength:"1" maxLength:"2048" description:"Absolute https URL (http only where the operator allows it), no user:password, resolving to a public address." example:"https://hooks.example.com/crm"`
	Events      *[]string `json:"events,omitempty" minItems:"1" maxItems:"32" description:"Event types, or \"*\" for all. An integration token's subscription receives only the types whose records its scopes let it read (contact.* and company.*: contacts:read, lead.*: leads:read, deal.*: deals:read, contract.*: contracts:read; :write implies :read); naming another type is 403 insufficient_scope." example:"[\"contact.created\",\"deal.updated\"]"`
	Description *string   `json:"description,omitempty" maxLength:"500" example:"billing sync"`
	Active      *bool     `json:"active,omitempty" description:"Default true; setting true again re-enables a subscription deactivated by a 410, but not one whose owner lost access (409 conflict)." example:"true"`
}

// Delivery is one event sent (or being sent) to one subscription, with the
// outcome of its latest attempt.
type Delivery struct {
	ID            int64           `json:"id" minimum:"1" example:"981"`
	WebhookID     int64           `json:"webhook_id" minimum:"1" example:"4"`
	EventID       string          `json:"event_id" description:"The event's id, also sent as the webhook-id header (the same on every attempt)." example:"evt_1042"`
	EventType     string          `json:"event_type" example:"contact.created"`
	Status        string          `json:"status" enum:"pending,delivered,failed" description:"pending: waiting for its next attempt; delivered: a 2xx came back; failed: given up (retries exhausted after 3 days, a redirect, a refused address, or the subscription answered 410)." example:"delivered"`
	Attempt       int             `json:"attempt" minimum:"0" description:"Attempts made so far." example:"1"`
	StatusCode    *int            `json:"status_code" minimum:"100" maximum:"599" description:"HTTP status of the latest attempt; null when no answer came." example:"200"`
	DurationMS    *int            `json:"duration_ms" minimum:"0" description:"Duration of the latest attempt in milliseconds." example:"84"`
	Error         *string         `json:"error" description:"Why the latest attempt failed, in fixed words (timeout, connection refused, redirect not followed, address not allowed...)." example:"receiver answered 500"`
	ResponseBody  *string         `json:"response_body" maxLength:"4096" description:"The start of the receiver's answer, at most 4 KB."`
	NextAttemptAt *timestamp.Time `json:"next_attempt_at" description:"When a pending delivery is tried again."`
	LastAttemptAt *timestamp.Time `json:"last_attempt_at"`
	CreatedAt     timestamp.Time  `json:"created_at"`

	Attempts []DeliveryAttempt `json:"attempts" nullable:"false" description:"Every attempt made, oldest first: the last is the one status_code, error, duration_ms, response_body and last_attempt_at describe; empty before the first. A delivery attempted before this list existed shows only its latest attempt."`
}

// Event is one change as the events feed and webhook deliveries carry it.
// data is the record as the API returns it; a record's *.deleted event
// carries only {"id"}, a property.* event the custom-field definition.
type Event struct {
	ID   string `json:"id" description:"evt_ and a number that increases with every event; pass the last one seen as ?after= to resume. A ping's id is ping_ and its delivery id." example:"evt_1042"`
	Type string `json:"type" example:"contact.created"`
	// SchemaVersion is additive (docs/releasing.md): a receiver of the previous
	// release ignores it.
	SchemaVersion int             `json:"schema_version" minimum:"1" example:"1" description:"The version of data's shape for this type: 1 for every type today. The shape of a version only grows (new fields, which a receiver must ignore); a change a receiver could not read comes as a new version, announced in the changelog."`
	CreatedAt     timestamp.Time  `json:"created_at" description:"When the change happened."`
	Data          json.RawMessage `json:"data" description:"The record after the change (the id only for a record's deletion), or the custom-field definition of a property.* event."`
}

// EventFeed is one page of ListEvents, oldest first.
type EventFeed struct {
	Success   bool    `json:"success" const:"true"`
	Data      []Event `json:"data" nullable:"false"`
	HasMore   bool    `json:"has_more" description:"More events follow next_after right now."`
	NextAfter *string `json:"next_after" description:"The id to pass as ?after= for the next page: the last event of this page, or the after given when the page is empty." example:"evt_1042"`
}
