package webhooksapi

import "github.com/opencrm/crm/pkg/timestamp"

// DeliveryAttempt is one attempt of a delivery: one POST to the receiver
// (or one that could not be made), as the delivery log lists it.
type DeliveryAttempt struct {
	Attempt      int            `json:"attempt" minimum:"1" description:"1 for the first attempt, counting up; the delivery's attempt is the latest one's." example:"1"`
	StatusCode   *int           `json:"status_code" minimum:"100" maximum:"599" description:"HTTP status the receiver answered; null when no answer came." example:"500"`
	Error        *string        `json:"error" description:"Why the attempt failed, in fixed words (timeout, connection refused, redirect not followed, address not allowed...); null when it succeeded." example:"receiver answered 500"`
	DurationMS   int            `json:"duration_ms" minimum:"0" description:"From sending the request to the end of the answer (or the failure), in milliseconds." example:"84"`
	ResponseBody *string        `json:"response_body" maxLength:"4096" description:"The start of the receiver's answer, at most 4 KB."`
	AttemptedAt  timestamp.Time `json:"attempted_at" description:"When the request was sent."`
}
