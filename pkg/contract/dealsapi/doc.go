// Package dealsapi is the deals context's contract with the others: the
// declaration of each public route (routes.go: deals' router mounts its
// handlers on them, the gateway routes and documents them), the wire
// types those routes read and answer (public.go), the paths of its
// internal API (spelled only here; deals' router registers the Route*
// patterns), the write request another context sends with the field names
// a refusal can carry, and one typed Client. Reads (a deal, its merge
// data) stay tolerant: a caller decodes them into its own projection.
// Changes here are additive.
package dealsapi
