// Package identityapi is identity's contract with the other contexts: the
// one declaration of each public route (routes.go), which identity mounts
// its handlers on and the gateway routes by, the paths of its internal API
// (spelled only here), the wire types they exchange, the errors a caller
// can act on, one typed Client, and the one cached API-key verifier both
// edges (gateway and intake) use. identityapitest holds a fake that
// identity's own tests run through the same cases as its real handlers, so
// consumers test against a fake that cannot drift. Changes here are
// additive: a consumer built against an older version must keep working.
package identityapi
