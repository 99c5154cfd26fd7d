// Package contactsapi is the contacts context's contract with the others:
// the paths of its internal API (spelled only here; contacts' router
// registers the Route* patterns), the write requests other contexts send
// with the id-bearing answer, the field names a refusal can carry, and one
// typed Client. Reads stay tolerant: a caller decodes the record into its
// own projection, so contacts can add fields freely. Changes here are
// additive.
package contactsapi
