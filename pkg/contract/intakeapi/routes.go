package intakeapi

import (
	"net/http"

	"github.com/opencrm/crm/pkg/contract/envelope"
	"github.com/opencrm/crm/pkg/contract/route"
)

// Service is the context's name: it keys the gateway's upstream addresses.
const Service = "intake"

// The public routes of intake: the API-key lead intake and the admins'
// view of its submissions.
var (
	SubmitLead = route.Route{Method: http.MethodPost, Path: "/public/leads", Service: Service, Auth: route.Key,
		BodyLimit: route.LimitPublic, Tag: "Public API",
		Summary: "Create a lead from an external source (≤ 64 KB; Idempotency-Key honoured)",
		Request: LeadSubmission{}, Status: http.StatusCreated, Response: SubmissionAnswer{}, Message: "Lead created successfully",
		Alternatives: []route.Alternative{{Status: http.StatusAccepted,
			Description: "Accepted and stored; the lead is created when the leads service is back (data.id null, data.submission_id set)",
			Message:     "Lead accepted; it will be created as soon as the leads service is available"}},
		Problems: []int{http.StatusConflict}}
	ListSubmissions = route.Route{Method: http.MethodGet, Path: "/intake/submissions", Service: Service, Auth: route.Admin,
		Tag: "Public API", Summary: "List public lead submissions",
		Query:    route.PageQuery(route.Q("status", "string", "", "pending", "delivered", "failed", "spam"), route.ID("api_key_id", "")),
		Response: envelope.Page[Submission]{}}
	GetSubmission = route.Route{Method: http.MethodGet, Path: "/intake/submissions/{id}", Service: Service, Auth: route.Admin,
		Tag: "Public API", Summary: "Get a public lead submission", Response: envelope.Record[Submission]{}}
)

// Routes are the public routes intake serves, in the document's order.
var Routes = []route.Route{SubmitLead, ListSubmissions, GetSubmission}
