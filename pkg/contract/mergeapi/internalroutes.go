package mergeapi

import "github.com/opencrm/crm/pkg/contract/route"

// InternalRoutes declare RouteMove once per context in Movers, each
// served as mergehttp serves it; the contexts' released documents
// (api/released/internal/<ctx>.json) freeze it with the rest of their
// internal API.
var InternalRoutes = func() []route.Internal {
	out := make([]route.Internal, len(Movers))
	for i, service := range Movers {
		out[i] = route.At(RouteMove, route.Internal{Service: service,
			Summary:     "Move the pointers of a merge's merged records to the survivor",
			Description: "Idempotent by nature: a repeat finds nothing left to move and answers zero counts. 422 names each bad field.",
			Request:     Move{}, Response: route.Data[Moved]{}})
	}
	return out
}()
