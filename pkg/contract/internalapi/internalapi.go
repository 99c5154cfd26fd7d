// Package internalapi gathers every context's internal route
// declarations (route.Internal, in each contract package's
// InternalRoutes): the gateway's generator writes one OpenAPI document per
// context from them (api/released/internal/<ctx>.json is the released
// one the gate compares with, docs/releasing.md), and each service's
// TestInternalRoutes proves it serves exactly its own
// (internalapitest.Check).
package internalapi

import (
	"slices"

	"github.com/opencrm/crm/pkg/contract/contactsapi"
	"github.com/opencrm/crm/pkg/contract/dealsapi"
	"github.com/opencrm/crm/pkg/contract/identityapi"
	"github.com/opencrm/crm/pkg/contract/leadsapi"
	"github.com/opencrm/crm/pkg/contract/mergeapi"
	"github.com/opencrm/crm/pkg/contract/privacyapi"
	"github.com/opencrm/crm/pkg/contract/route"
)

// Routes is every internal route of every context, each context's own
// first, then the shared contracts' (a merge's move, privacy).
var Routes = slices.Concat(
	contactsapi.InternalRoutes,
	dealsapi.InternalRoutes,
	leadsapi.InternalRoutes,
	identityapi.InternalRoutes,
	mergeapi.InternalRoutes,
	privacyapi.InternalRoutes,
)

// Services are the contexts that serve an internal route, sorted.
func Services() []string {
	var out []string
	for _, r := range Routes {
		out = append(out, r.Service)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Of is the internal API service serves, in Routes' order.
func Of(service string) []route.Internal { return route.Served(service, Routes) }
