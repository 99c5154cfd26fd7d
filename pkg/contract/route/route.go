// Package route is the shape of a public route's one declaration. Each
// context declares its routes in its contract package (<ctx>api/routes.go);
// the service mounts its handlers on them, the gateway derives its routing
// and authorization table from them, and the OpenAPI document is derived
// from them too, so a public path is spelled in exactly one place.
package route

// Auth is how the gateway authenticates a route before proxying it.
type Auth uint8

// The four policies of the public API (docs/api.md, Authentication).
const (
	// Public needs no credential (login, refresh, logout, JWKS).
	Public Auth = iota
	// JWT needs a valid bearer access token (a person's or an integration token).
	JWT
	// Admin needs a valid bearer access token with role admin.
	Admin
	// Key needs X-API-Key and refuses bearer tokens (the public intake API).
	Key
)

func (a Auth) String() string {
	switch a {
	case Public:
		return "public"
	case JWT:
		return "jwt"
	case Admin:
		return "admin"
	case Key:
		return "key"
	}
	return "unknown"
}

// Route is one public operation. Path is the path under /api as the client
// sees it, and also the path the owning service serves.
type Route struct {
	Method  string
	Path    string
	Service string
	Auth    Auth
	// Resource names the integration-token scope family of a JWT or Admin
	// route (see Scope).
	Resource string
	// BodyLimit is the request body limit in bytes; 0 means LimitJSON.
	BodyLimit int64
	Tag       string
	Summary   string
}

// Pattern is the route as a net/http ServeMux pattern ("POST /leads/{id}/qualify").
func (r Route) Pattern() string { return r.Method + " " + r.Path }
