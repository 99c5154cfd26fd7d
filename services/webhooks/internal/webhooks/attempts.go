package webhooks

import "github.com/opencrm/crm/pkg/timestamp"

// DeliveryAttempt is one attempt of a delivery as its log lists it.
type DeliveryAttempt struct {
	Attempt      int            `json:"attempt"`
	StatusCode   *int           `json:"status_code"`
	Error        *string        `json:"error"`
	DurationMS   int            `json:"duration_ms"`
	ResponseBody *string        `json:"response_body"`
	AttemptedAt  timestamp.Time `json:"attempted_at"`
}
