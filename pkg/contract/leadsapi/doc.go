// Package leadsapi is the leads context's contract with the others: the
// paths of its internal API (spelled only here; leads' router registers
// the Route* patterns), the batch create exchange intake forwards public
// submissions with, and one typed Client. A lead read stays tolerant: a
// caller decodes it into its own projection. Leads encodes its records and
// decodes its bodies as the public types here themselves, with no copies to
// keep in step: timestamps are timestamp.Time, and an optional field of a
// write a patch.Field (absent keeps, null clears). Changes here are additive.
package leadsapi
