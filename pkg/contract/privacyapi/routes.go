package privacyapi

import (
	"net/http"

	"github.com/opencrm/crm/pkg/contract/envelope"
	"github.com/opencrm/crm/pkg/contract/route"
)

// The public routes of privacy requests, admin only (scope admin for
// integration tokens). Identity serves them and runs each request across
// the contexts.
var (
	CreateExport = route.Route{Method: http.MethodPost, Path: "/privacy/exports", Service: Service, Auth: route.Admin,
		Tag: "Privacy", Summary: "Export everything held about a person (GDPR Art. 15 and 20), as a job",
		Description: "The export runs in the background; poll GET /privacy/exports/{id} until its status is completed. " +
			"Refused with 409 while an erasure of the same address runs.",
		Request: ExportRequest{}, Status: http.StatusAccepted, Response: envelope.Record[Export]{},
		Message: "export started", Problems: []int{http.StatusConflict}}
	GetExport = route.Route{Method: http.MethodGet, Path: "/privacy/exports/{id}", Service: Service, Auth: route.Admin,
		Tag: "Privacy", Summary: "A person's export: its status, then the document",
		Description: "An erasure of the person deletes their earlier exports: their ids then answer 404.",
		Response:    envelope.Record[Export]{}}
	CreateErasure = route.Route{Method: http.MethodPost, Path: "/privacy/erasures", Service: Service, Auth: route.Admin,
		Tag: "Privacy", Summary: "Erase a person from every context (GDPR Art. 17), as a job",
		Description: "An idempotent saga across the contexts; a context that is down delays it, never loses it. " +
			"A second request for the same address answers the first erasure.",
		Request: ErasureRequest{}, Status: http.StatusAccepted, Response: envelope.Record[Erasure]{},
		Message: "erasure started"}
	GetErasure = route.Route{Method: http.MethodGet, Path: "/privacy/erasures/{id}", Service: Service, Auth: route.Admin,
		Tag: "Privacy", Summary: "An erasure's status and its receipt per context",
		Response: envelope.Record[Erasure]{}}
)

// Routes are the public privacy routes, in the document's order.
var Routes = []route.Route{CreateExport, GetExport, CreateErasure, GetErasure}
