// Package dealsapi is the deals context's contract with the others: the
// declaration of each public route (routes.go: deals' router mounts its
// handlers on them, the gateway routes and documents them), the wire
// types those routes read and answer (public.go), the paths of its
// internal API (spelled only here; deals' router registers the Route*
// patterns), the write request another context sends with the field names
// a refusal can carry, and one typed Client. Reads (a deal, its merge
// data) stay tolerant: a caller decodes them into its own projection.
// Deals decodes its bodies as the public types here themselves and sends
// its records as them, with no copies to keep in step: timestamps are
// timestamp.Time, an optional field of a write a patch.Field (absent
// keeps, null clears), and a decimal a Decimal, kept as its text so no
// float ever reads it. Changes here are additive.
package dealsapi
