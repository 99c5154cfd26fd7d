package contractsapi

import (
	"net/http"

	"github.com/opencrm/crm/pkg/contract/contactsapi"
	"github.com/opencrm/crm/pkg/contract/envelope"
	"github.com/opencrm/crm/pkg/contract/historyapi"
	"github.com/opencrm/crm/pkg/contract/route"
)

// Service is the context's name: it keys the gateway's upstream addresses.
const Service = "contracts"

// Resource is the integration-token scope family of contracts.
const Resource = "contracts"

var contractQuery = route.PageQuery(
	route.Q("status", "string", "One status or a comma-separated list of draft, active, executed, expired, terminated, archived."), route.ID("deal_id", ""),
	route.Param{Name: "expiring_within", Type: "integer", Desc: "Days; active and executed contracts only.", Min: new(0)}, route.UpdatedSince, route.AfterID,
	route.Q("sort_by", "string", "Default contract_number.", "contract_number", "name", "company_name", "deal_title", "status", "effective_date", "termination_date", "created_at", "updated_at"))

// The public routes of contracts and their templates.
var (
	ListContracts = route.Route{Method: http.MethodGet, Path: "/contracts", Service: Service, Auth: route.JWT, Resource: Resource,
		Tag: "Contracts", Summary: "List contracts", Query: contractQuery, Response: envelope.Page[Contract]{}}
	CreateContract = route.Route{Method: http.MethodPost, Path: "/contracts", Service: Service, Auth: route.JWT, Resource: Resource,
		Tag: "Contracts", Summary: "Generate a contract for a deal from a template", Request: ContractInput{}, Status: http.StatusCreated,
		Response: envelope.Record[Contract]{}, Message: "Contract created"}
	GetContract = route.Route{Method: http.MethodGet, Path: "/contracts/{id}", Service: Service, Auth: route.JWT, Resource: Resource,
		Tag: "Contracts", Summary: "Get a contract", Response: envelope.Record[Contract]{}}
	UpdateContract = route.Route{Method: http.MethodPut, Path: "/contracts/{id}", Service: Service, Auth: route.JWT, Resource: Resource,
		Tag: "Contracts", Summary: "Update a contract (status changes go through status)", Request: ContractInput{},
		Response: envelope.Record[Contract]{}, Message: "Contract updated", Problems: []int{http.StatusConflict}}
	DeleteContract = route.Route{Method: http.MethodDelete, Path: "/contracts/{id}", Service: Service, Auth: route.JWT, Resource: Resource,
		Tag: "Contracts", Summary: "Delete a contract", Response: envelope.Deleted{}, Message: "Contract deleted",
		Problems: []int{http.StatusConflict}}
	GetContractPDF = route.Route{Method: http.MethodGet, Path: "/contracts/{id}/pdf", Service: Service, Auth: route.JWT, Resource: Resource,
		Tag: "Contracts", Summary: "Download the contract as PDF (A4)", Answers: route.PDF, Problems: []int{http.StatusUnprocessableEntity}}
	GetContractDOCX = route.Route{Method: http.MethodGet, Path: "/contracts/{id}/docx", Service: Service, Auth: route.JWT, Resource: Resource,
		Tag: "Contracts", Summary: "Download the contract as Word .docx", Answers: route.DOCX, Problems: []int{http.StatusUnprocessableEntity}}
	RegenerateContract = route.Route{Method: http.MethodPut, Path: "/contracts/{id}/regenerate", Service: Service, Auth: route.JWT, Resource: Resource,
		Tag: "Contracts", Summary: "Re-apply template and merge tags", Response: envelope.Record[Contract]{},
		Message: "Contract regenerated", Problems: []int{http.StatusConflict}}
	UploadExecuted = route.Route{Method: http.MethodPost, Path: "/contracts/{id}/executed", Service: Service, Auth: route.JWT, Resource: Resource,
		BodyLimit: route.LimitExecuted, Tag: "Contracts", Summary: "Upload the signed copy (PDF, ≤ 25 MB; 409 when one exists)",
		Accepts: route.Form, Status: http.StatusCreated, Response: envelope.Record[Contract]{}, Message: "Signed copy uploaded",
		Problems: []int{http.StatusConflict}}
	GetExecuted = route.Route{Method: http.MethodGet, Path: "/contracts/{id}/executed", Service: Service, Auth: route.JWT, Resource: Resource,
		Tag: "Contracts", Summary: "Download the signed copy", Answers: route.PDF}
	DeleteExecuted = route.Route{Method: http.MethodDelete, Path: "/contracts/{id}/executed", Service: Service, Auth: route.Admin,
		Tag: "Contracts", Summary: "Delete the signed copy", Response: envelope.Deleted{}, Message: "Signed copy deleted"}

	ListTemplates = route.Route{Method: http.MethodGet, Path: "/contract-templates", Service: Service, Auth: route.Admin,
		Tag: "Contract templates", Summary: "List contract templates", Response: envelope.List[Template]{}}
	CreateTemplate = route.Route{Method: http.MethodPost, Path: "/contract-templates", Service: Service, Auth: route.Admin,
		Tag: "Contract templates", Summary: "Create a contract template", Request: TemplateInput{}, Status: http.StatusCreated,
		Response: envelope.Record[Template]{}, Message: "Template created"}
	GetTemplate = route.Route{Method: http.MethodGet, Path: "/contract-templates/{id}", Service: Service, Auth: route.Admin,
		Tag: "Contract templates", Summary: "Get a contract template", Response: envelope.Record[Template]{}}
	UpdateTemplate = route.Route{Method: http.MethodPut, Path: "/contract-templates/{id}", Service: Service, Auth: route.Admin,
		Tag: "Contract templates", Summary: "Update a contract template", Request: TemplateInput{},
		Response: envelope.Record[Template]{}, Message: "Template updated"}
	DeleteTemplate = route.Route{Method: http.MethodDelete, Path: "/contract-templates/{id}", Service: Service, Auth: route.Admin,
		Tag: "Contract templates", Summary: "Delete a contract template", Response: envelope.Deleted{}, Message: "Template deleted",
		Problems: []int{http.StatusConflict}}
	ListMergeTags = route.Route{Method: http.MethodGet, Path: "/contract-templates/tags", Service: Service, Auth: route.Admin,
		Tag: "Contract templates", Summary: "Merge tags grouped by entity", Response: MergeTags{}}
	GetMergeTagsPDF = route.Route{Method: http.MethodGet, Path: "/contract-templates/tags/pdf", Service: Service, Auth: route.Admin,
		Tag: "Contract templates", Summary: "Merge-tag catalogue as PDF", Answers: route.PDF, Problems: []int{http.StatusUnprocessableEntity}}

	// ContractActivity is the notes and tasks of a contract.
	ContractActivity = contactsapi.NewActivity(Service, Resource, "Contracts", "/contracts", "contract")

	// ContractHistory is a contract's change history, its notes' and
	// tasks' included. Templates have no route of their own: an admin
	// reads a template's history through historyapi.Admin.
	ContractHistory = historyapi.NewRoute(Service, Resource, "Contracts", "/contracts", "contract")
)

// Routes are the public routes contracts serves, in the document's order.
var Routes = append(append([]route.Route{
	ListContracts, CreateContract, GetContract, UpdateContract, DeleteContract, ContractHistory,
	GetContractPDF, GetContractDOCX, RegenerateContract,
}, ContractActivity.Routes()...),
	UploadExecuted, GetExecuted, DeleteExecuted,
	ListTemplates, CreateTemplate, GetTemplate, UpdateTemplate, DeleteTemplate, ListMergeTags, GetMergeTagsPDF)
