// Package dealsapi is the deals context's contract with the others: the
// paths of its internal API (spelled only here; deals' router registers
// the Route* patterns), the write request another context sends with the
// field names a refusal can carry, and one typed Client. Reads (a deal,
// its merge data) stay tolerant: a caller decodes them into its own
// projection. Changes here are additive.
package dealsapi
