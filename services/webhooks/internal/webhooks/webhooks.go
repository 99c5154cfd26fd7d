// Package webhooks is the webhooks context's domain: subscriptions and
// their validation, signing secrets, deliveries and the events feed, in
// the shapes the API answers with (pkg/contract/webhooksapi).
package webhooks

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"strconv"
	"strings"

	"github.com/opencrm/crm/pkg/auth"
	"github.com/opencrm/crm/pkg/contract/webhooksapi"
)

// Delivery statuses.
const (
	StatusPending   = "pending"
	StatusDelivered = "delivered"
	StatusFailed    = "failed"
)

// Statuses are the values of the deliveries' status filter.
var Statuses = []string{StatusPending, StatusDelivered, StatusFailed}

// The records the API answers with are the contract's types themselves:
// a field is added once, in pkg/contract/webhooksapi.
type (
	// Webhook is a subscription as the API returns it.
	Webhook = webhooksapi.Webhook
	// Delivery is one event sent (or being sent) to one subscription.
	Delivery = webhooksapi.Delivery
	// DeliveryAttempt is one attempt of a delivery as its log lists it.
	DeliveryAttempt = webhooksapi.DeliveryAttempt
	// Event is one change as the feed and the deliveries carry it.
	Event = webhooksapi.Event
)

// EventID is the public id of the event numbered seq.
func EventID(seq int64) string { return "evt_" + strconv.FormatInt(seq, 10) }

// PingID is the id of the ping sent as delivery id.
func PingID(deliveryID int64) string { return "ping_" + strconv.FormatInt(deliveryID, 10) }

// ParseEventID reverses EventID; ok is false for anything else.
func ParseEventID(s string) (int64, bool) {
	n, ok := strings.CutPrefix(s, "evt_")
	if !ok || n == "" || len(n) > 19 {
		return 0, false
	}
	for _, c := range n {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	seq, err := strconv.ParseInt(n, 10, 64)
	return seq, err == nil
}

// secretBytes is the length of the random key of a signing secret.
const secretBytes = 32

// fingerprintLen is how many hex digits of the secret's SHA-256 the
// fingerprint keeps: enough to tell secrets apart, nothing of the key.
const fingerprintLen = 16

// NewSecret returns a fresh signing secret (whsec_ and base64 of 32
// random bytes) and its fingerprint.
func NewSecret() (secret, fingerprint string) {
	b := make([]byte, secretBytes)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	secret = webhooksapi.SecretPrefix + base64.StdEncoding.EncodeToString(b)
	return secret, Fingerprint(secret)
}

// Fingerprint is what reads show of a secret to tell it from another: the
// first 16 hex digits of the SHA-256 of the whole secret string, which a
// receiver can compute from the secret it holds. Showing the secret's
// first characters instead (as secret_prefix did) gave away key material.
func Fingerprint(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])[:fingerprintLen]
}

// ReadScope is the scope an integration token needs to receive events of
// type t: the records they carry are the ones the token could read through
// the API (companies belong to contacts), and custom-field definitions are
// read at admin-only routes, so their events need admin. Empty for a type
// carrying no record (ping).
func ReadScope(t string) string {
	res, _, _ := strings.Cut(t, ".")
	switch res {
	case "property":
		return auth.ScopeAdmin
	case "contact", "company":
		return "contacts:read"
	case "lead":
		return "leads:read"
	case "deal":
		return "deals:read"
	case "contract":
		return "contracts:read"
	}
	return ""
}

// MayRead reports whether an owner holding scopes may receive events of
// type t; nil scopes are an admin person's, who may read everything. A
// type of an unknown resource is refused to a token.
func MayRead(scopes []string, t string) bool {
	if scopes == nil {
		return true
	}
	need := ReadScope(t)
	return need != "" && auth.GrantsScope(scopes, need)
}

// Readable returns the event types of webhooksapi.EventTypes an owner
// holding scopes may receive (all of them for nil scopes).
func Readable(scopes []string) []string {
	out := make([]string, 0, len(webhooksapi.EventTypes))
	for _, t := range webhooksapi.EventTypes {
		if MayRead(scopes, t) {
			out = append(out, t)
		}
	}
	return out
}

// Matches reports whether a subscription to events wants type t.
func Matches(events []string, t string) bool {
	for _, e := range events {
		if e == t || e == webhooksapi.All {
			return true
		}
	}
	return false
}
