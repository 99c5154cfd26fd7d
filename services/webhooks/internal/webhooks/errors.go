package webhooks

import (
	"strconv"

	"github.com/opencrm/crm/pkg/fault"
)

// ErrNotFound is a subscription that does not exist, or (to an
// integration token) one another owner made: a token learns nothing of
// the others.
var ErrNotFound = fault.NotFound("webhook")

// ErrDeliveryNotFound is a delivery that is not one of the subscription's.
var ErrDeliveryNotFound = fault.NotFound("delivery")

// ErrOwnerGone is a create or an activation for an owner who lost access:
// a revoked token, a deactivated user, or (for a subscription an admin
// person made) a user no longer an admin.
var ErrOwnerGone = fault.Conflict("conflict",
	"the subscription's owner no longer has access (its access token was revoked, or the user was deactivated or is no longer an admin)")

// ErrOwnerLimit is a create beyond the owner's cap of max subscriptions.
func ErrOwnerLimit(max int) error {
	return fault.Conflict("conflict", "an owner may have at most "+strconv.Itoa(max)+" subscriptions; delete one first")
}
