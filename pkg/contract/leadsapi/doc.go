// Package leadsapi is the leads context's contract with the others: the
// paths of its internal API (spelled only here; leads' router registers
// the Route* patterns), the batch create exchange intake forwards public
// submissions with, and one typed Client. A lead read stays tolerant: a
// caller decodes it into its own projection. Changes here are additive.
package leadsapi
