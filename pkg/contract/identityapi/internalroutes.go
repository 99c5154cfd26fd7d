package identityapi

import (
	"github.com/opencrm/crm/pkg/contract/envelope"
	"github.com/opencrm/crm/pkg/contract/route"
)

// InternalRoutes are the routes of identity's internal API, what
// TestInternalRoutes (services/identity/internal/api) proves identity
// serves and api/released/internal/identity.json freezes.
var InternalRoutes = []route.Internal{
	route.At(RouteUsers, route.Internal{Service: Service, Summary: "List every user's directory entry (the snapshot)",
		Response: envelope.List[DirectoryUser]{}}),
	route.At(RouteUser, route.Internal{Service: Service, Summary: "Read one user's directory entry", Response: envelope.Record[DirectoryUser]{}}),
	route.At(RouteVerifyKey, route.Internal{Service: Service, Summary: "Verify an API key",
		Description: "401 for an unknown or revoked key.",
		Request:     VerifyKeyRequest{}, Response: envelope.Record[VerifiedKey]{}}),
	route.At(RouteVerifyAccessToken, route.Internal{Service: Service, Summary: "Verify an integration token and mint an access token for its service user",
		Description: "401 for an unknown, revoked or expired token.",
		Request:     VerifyAccessTokenRequest{}, Response: envelope.Record[VerifiedAccessToken]{}}),
}
