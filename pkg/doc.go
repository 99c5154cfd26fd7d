// Package pkg is the root of the platform's shared libraries. Nothing here
// holds a business rule of one bounded context: config, logging, database and
// migrations, problem errors, list queries, auth, the outbox, test helpers.
package pkg
