package privacyapi

import "github.com/opencrm/crm/pkg/contract/route"

// InternalRoutes declare RouteExport and RouteErase once per context in
// Contexts (each serves its part of a privacy request, through
// pkg/privacy/privacyhttp); the contexts' released documents
// (api/released/internal/<ctx>.json) freeze them with the rest of their
// internal API.
var InternalRoutes = func() []route.Internal {
	var out []route.Internal
	for _, service := range Contexts {
		out = append(out,
			route.At(RouteExport, route.Internal{Service: service,
				Summary: "Export what this context holds about a person", Request: Subject{}, Response: route.Data[ExportPart]{}}),
			route.At(RouteErase, route.Internal{Service: service,
				Summary:     "Erase this context's part of a person, once per erasure",
				Description: "A repeated call for the same erasure answers the first call's part.",
				Request:     Subject{}, Response: route.Data[ErasePart]{}}))
	}
	return out
}()
