// Package wiretest holds each service's records and request bodies to the
// public wire types the OpenAPI document is generated from, so every
// service's TestWireTypes is one table and one call.
package wiretest

import (
	"testing"

	"github.com/opencrm/crm/pkg/contract/envelope"
)

// Case pairs a type a service encodes or decodes with its wire type.
// NamesOnly compares JSON names alone, for request types whose service
// side uses patch fields.
type Case struct {
	Name          string
	Service, Wire any
	NamesOnly     bool
}

// Check reports every mismatch of every case (envelope.FieldMismatches).
func Check(t testing.TB, cases []Case) {
	t.Helper()
	for _, c := range cases {
		for _, m := range envelope.FieldMismatches(c.Service, c.Wire, c.NamesOnly) {
			t.Errorf("%s: %s", c.Name, m)
		}
	}
}
