package dealsapitest

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/opencrm/crm/pkg/contract/dealsapi"
	"github.com/opencrm/crm/pkg/contract/propertyapi"
	"github.com/opencrm/crm/pkg/problem"
)

// Backend is a deals service the contract runs against, with the ids of
// a company, a contact and a lead that exist for it, the internal read of
// its custom-field definitions, and a way to define some.
type Backend interface {
	Client() *dealsapi.Client
	Properties() *propertyapi.Client
	Define(t *testing.T, defs ...propertyapi.PropertyInput)
	Company() int64
	Contact() int64
	Lead() int64
}

// Fields are the custom fields of deals Run defines.
var Fields = []propertyapi.PropertyInput{
	{Name: "region", Label: "Region", Type: "enum", Options: []propertyapi.Option{{Value: "emea", Label: "EMEA"}, {Value: "apac", Label: "APAC"}}},
	{Name: "erp_id", Label: "ERP id", Type: "text", Unique: true, Position: 1},
}

// Run is the deals internal API contract, through the typed client.
func Run(t *testing.T, b Backend) {
	ctx := context.Background()
	c := b.Client()
	co, ct, lead, stage := b.Company(), b.Contact(), b.Lead(), Stages[0]
	b.Define(t, Fields...)
	defs, err := b.Properties().List(ctx, propertyapi.Deals)
	if err != nil {
		t.Fatal(err)
	}
	names := []string{}
	for _, d := range defs {
		names = append(names, d.Object+"."+d.Name+":"+d.Type)
	}
	if diff := cmp.Diff([]string{"deals.region:enum", "deals.erp_id:text"}, names); diff != "" {
		t.Errorf("definitions read (-want +got):\n%s", diff)
	}
	req := dealsapi.CreateDealRequest{Title: "Acme deal", Value: "1500.50", StageID: &stage,
		CompanyID: &co, ContactID: &ct, SourceLeadID: lead,
		CustomFields: map[string]json.RawMessage{"region": json.RawMessage(`"emea"`)}}
	id, err := c.CreateDeal(ctx, "contract-deal-1", req)
	if err != nil {
		t.Fatal(err)
	}
	if again, err := c.CreateDeal(ctx, "contract-deal-1", req); err != nil || again != id {
		t.Errorf("replay: %d, %v; want %d", again, err, id)
	}
	other := req
	other.Title = "Other"
	_, err = c.CreateDeal(ctx, "contract-deal-1", other)
	wantProblem(t, err, http.StatusConflict, "idempotency_key_reused")

	unknown := int64(99_999_999)
	for _, tc := range []struct {
		name  string
		req   func(r *dealsapi.CreateDealRequest)
		field string
	}{
		{"no title", func(r *dealsapi.CreateDealRequest) { r.Title = " " }, dealsapi.FieldTitle},
		{"three decimals", func(r *dealsapi.CreateDealRequest) { r.Value = "1.005" }, dealsapi.FieldValue},
		{"too large", func(r *dealsapi.CreateDealRequest) { r.Value = dealsapi.MaxValue.String() }, dealsapi.FieldValue},
		{"unknown stage", func(r *dealsapi.CreateDealRequest) { r.StageID = &unknown }, dealsapi.FieldStageID},
		{"unknown company", func(r *dealsapi.CreateDealRequest) { r.CompanyID = &unknown }, dealsapi.FieldCompanyID},
		{"unknown contact", func(r *dealsapi.CreateDealRequest) { r.ContactID = &unknown }, dealsapi.FieldContactID},
		{"unknown lead", func(r *dealsapi.CreateDealRequest) { r.SourceLeadID = unknown }, dealsapi.FieldSourceLeadID},
		{"not an option", func(r *dealsapi.CreateDealRequest) {
			r.CustomFields = map[string]json.RawMessage{"region": json.RawMessage(`"mars"`)}
		}, dealsapi.FieldCustom("region")},
		{"unknown custom field", func(r *dealsapi.CreateDealRequest) {
			r.CustomFields = map[string]json.RawMessage{"nope": json.RawMessage(`1`)}
		}, dealsapi.FieldCustom("nope")},
		{"wrong type", func(r *dealsapi.CreateDealRequest) {
			r.CustomFields = map[string]json.RawMessage{"erp_id": json.RawMessage(`{"a":1}`)}
		}, dealsapi.FieldCustom("erp_id")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bad := req
			tc.req(&bad)
			// The body is checked before the key: a refused body under a
			// used key is still the 422.
			_, err := c.CreateDeal(ctx, "contract-deal-1", bad)
			wantProblem(t, err, http.StatusUnprocessableEntity, "validation_failed", tc.field)
		})
	}

	for _, tc := range []struct {
		exists func(context.Context, int64) (bool, error)
		id     int64
		want   bool
	}{{c.DealExists, id, true}, {c.DealExists, unknown, false}, {c.StageExists, stage, true}, {c.StageExists, unknown, false}} {
		if ok, err := tc.exists(ctx, tc.id); err != nil || ok != tc.want {
			t.Errorf("exists(%d) = %v, %v; want %v", tc.id, ok, err, tc.want)
		}
	}
	var m struct {
		Deal struct {
			ID           int64          `json:"id"`
			Title        string         `json:"title"`
			CustomFields map[string]any `json:"custom_fields"`
		} `json:"deal"`
	}
	if err := c.Merge(ctx, id, &m); err != nil || m.Deal.ID != id || m.Deal.Title != "Acme deal" {
		t.Errorf("merge: %+v, %v", m, err)
	}
	if diff := cmp.Diff(map[string]any{"region": "emea", "erp_id": nil}, m.Deal.CustomFields); diff != "" {
		t.Errorf("the deal's custom fields (-want +got):\n%s", diff)
	}
	if err := c.Merge(ctx, unknown, &m); !errors.Is(err, dealsapi.ErrNotFound) {
		t.Errorf("merge of an unknown deal: %v, want ErrNotFound", err)
	}
}

func wantProblem(t *testing.T, err error, status int, code string, fields ...string) {
	t.Helper()
	var p *problem.Error
	if !errors.As(err, &p) {
		t.Fatalf("err = %v, want a %d problem", err, status)
	}
	got := []string{}
	for _, fe := range p.Errors {
		got = append(got, fe.Field)
	}
	if fields == nil {
		fields = []string{}
	}
	if diff := cmp.Diff(map[string]any{"status": status, "code": code, "fields": fields},
		map[string]any{"status": p.Status, "code": p.Code, "fields": got}); diff != "" {
		t.Errorf("problem (-want +got):\n%s", diff)
	}
}
