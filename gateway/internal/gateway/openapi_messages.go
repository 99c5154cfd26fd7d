package gateway

import (
	"strconv"
	"strings"
)

// messages is the message of each write's success answer, word for word
// as the service sends it, keyed "METHOD /path" (its documented success
// status) or "METHOD /path STATUS" (an alternative success). The
// operation's example shows it; a success answer of an operation without
// one shows no message. TestOpenAPIMessages checks that each is a string
// of the service the route goes to, so an example cannot name another
// resource's message.
var messages = map[string]string{
	"POST /auth/logout":          "logged out",
	"POST /auth/keys/rotate":     "signing key rotated",
	"POST /users":                "user created",
	"PUT /users/{id}":            "user updated",
	"DELETE /users/{id}":         "user deactivated",
	"POST /teams":                "team created",
	"PUT /teams/{id}":            "team updated",
	"DELETE /teams/{id}":         "team deleted",
	"POST /api-keys":             "api key created; store the key now, it is not shown again",
	"DELETE /api-keys/{id}":      "api key revoked",
	"POST /access-tokens":        "access token created; store the token now, it is not shown again",
	"DELETE /access-tokens/{id}": "access token revoked",

	"POST /contacts":         "Contact created",
	"PUT /contacts/{id}":     "Contact updated",
	"DELETE /contacts/{id}":  "Contact deleted",
	"POST /contacts/import":  "Imported 98 contacts, skipped 2",
	"POST /companies":        "Company created",
	"PUT /companies/{id}":    "Company updated",
	"DELETE /companies/{id}": "Company deleted",

	"POST /leads":                "Lead created",
	"PUT /leads/{id}":            "Lead updated",
	"DELETE /leads/{id}":         "Lead deleted",
	"POST /leads/{id}/qualify":   "Lead qualified",
	"PUT /leads/{id}/disqualify": "Lead disqualified",
	"POST /leads/import":         "Imported 98 leads, skipped 2",

	"POST /deal-stages":        "Deal stage created",
	"PUT /deal-stages/{id}":    "Deal stage updated",
	"DELETE /deal-stages/{id}": "Deal stage deleted",
	"POST /deals":              "Deal created",
	"PUT /deals/{id}":          "Deal updated",
	"DELETE /deals/{id}":       "Deal deleted",
	"POST /deals/{id}/quotes":  "Quote created",
	"PUT /quotes/{id}":         "Quote updated",
	"DELETE /quotes/{id}":      "Quote deleted",

	"POST /contracts":                 "Contract created",
	"PUT /contracts/{id}":             "Contract updated",
	"DELETE /contracts/{id}":          "Contract deleted",
	"PUT /contracts/{id}/regenerate":  "Contract regenerated",
	"POST /contracts/{id}/executed":   "Signed copy uploaded",
	"DELETE /contracts/{id}/executed": "Signed copy deleted",
	"POST /contract-templates":        "Template created",
	"PUT /contract-templates/{id}":    "Template updated",
	"DELETE /contract-templates/{id}": "Template deleted",

	"POST /public/leads":     "Lead created successfully",
	"POST /public/leads 202": "Lead accepted; it will be created as soon as the leads service is available",

	"POST /emails":              "email stored",
	"POST /emails 200":          "email already stored",
	"POST /mailboxes":           "mailbox connected; the first sync is queued",
	"PUT /mailboxes/{id}":       "mailbox updated; a sync is queued",
	"DELETE /mailboxes/{id}":    "mailbox disconnected",
	"POST /mailboxes/{id}/sync": "sync queued",

	"POST /webhooks":                                    "Webhook created",
	"PUT /webhooks/{id}":                                "Webhook updated",
	"DELETE /webhooks/{id}":                             "Webhook deleted",
	"POST /webhooks/{id}/rotate-secret":                 "Signing secret rotated",
	"POST /webhooks/{id}/deliveries/{deliveryId}/retry": "Delivery queued for retry",
}

// activityMessages are the messages of the notes and tasks of every
// parent (contacts, leads, contracts), answered by the shared handlers of
// pkg/activity.
var activityMessages = map[string]string{
	"POST /{id}/notes":            "Note added",
	"DELETE /{id}/notes/{noteId}": "Note deleted",
	"POST /{id}/tasks":            "Task created",
	"PUT /{id}/tasks/{taskId}":    "Task updated",
	"DELETE /{id}/tasks/{taskId}": "Task deleted",
}

// successMessage is the message the answer of op with status carries, or
// "" for none.
func successMessage(op Operation, status string) string {
	key := op.Method + " " + op.Path
	if status != strconv.Itoa(op.Success) {
		return messages[key+" "+status]
	}
	if m, ok := messages[key]; ok {
		return m
	}
	for _, parent := range []string{"/contacts", "/leads", "/contracts"} {
		if rest, ok := strings.CutPrefix(op.Path, parent); ok {
			if m, ok := activityMessages[op.Method+" "+rest]; ok {
				return m
			}
		}
	}
	return ""
}
