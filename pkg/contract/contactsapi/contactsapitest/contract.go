package contactsapitest

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/opencrm/crm/pkg/contract/contactsapi"
	"github.com/opencrm/crm/pkg/contract/propertyapi"
	"github.com/opencrm/crm/pkg/customfield"
	"github.com/opencrm/crm/pkg/problem"
)

// Backend is a contacts service the contract runs against: the Fake, or
// contacts' real handlers over its database, with the internal read of its
// custom-field definitions and a way to define some of an object.
type Backend interface {
	Client() *contactsapi.Client
	Properties() *propertyapi.Client
	Define(t *testing.T, object string, defs ...propertyapi.PropertyInput)
}

// ContactFields and CompanyFields are the custom fields Run defines.
var (
	ContactFields = []propertyapi.PropertyInput{
		{Name: "region", Label: "Region", Type: "enum", Options: []propertyapi.Option{{Value: "emea", Label: "EMEA"}, {Value: "apac", Label: "APAC"}}},
		{Name: "erp_id", Label: "ERP id", Type: "text", Unique: true, Position: 1},
	}
	CompanyFields = []propertyapi.PropertyInput{
		{Name: "tier", Label: "Tier", Type: "enum", Options: []propertyapi.Option{{Value: "gold", Label: "Gold"}}},
	}
)

// Run is the contacts internal API contract, through the typed client.
func Run(t *testing.T, b Backend) {
	ctx := context.Background()
	c := b.Client()
	wantProblem := func(t *testing.T, err error, status int, code string, fields ...string) {
		t.Helper()
		var p *problem.Error
		if !errors.As(err, &p) {
			t.Fatalf("err = %v, want a %d problem", err, status)
		}
		var got []string
		for _, fe := range p.Errors {
			got = append(got, fe.Field)
		}
		if diff := cmp.Diff(append([]any{status, code}, toAny(fields)...), append([]any{p.Status, p.Code}, toAny(got)...)); diff != "" {
			t.Errorf("problem (-want +got):\n%s", diff)
		}
	}

	// Defined before any record is created: the fake renders a record's
	// custom fields when it stores it.
	b.Define(t, propertyapi.Contacts, ContactFields...)
	b.Define(t, propertyapi.Companies, CompanyFields...)
	for object, want := range map[string][]string{
		propertyapi.Contacts:  {"contacts.region:enum", "contacts.erp_id:text"},
		propertyapi.Companies: {"companies.tier:enum"},
	} {
		defs, err := b.Properties().List(ctx, object)
		if err != nil {
			t.Fatal(err)
		}
		names := []string{}
		for _, d := range defs {
			names = append(names, d.Object+"."+d.Name+":"+d.Type)
		}
		if diff := cmp.Diff(want, names); diff != "" {
			t.Errorf("definitions of %s read (-want +got):\n%s", object, diff)
		}
	}

	acme, err := c.CreateCompany(ctx, "contract-co-1", contactsapi.CreateCompanyRequest{Name: "Acme, Inc."})
	if err != nil {
		t.Fatal(err)
	}
	again, err := c.CreateCompany(ctx, "contract-co-1", contactsapi.CreateCompanyRequest{Name: "Acme, Inc."})
	if err != nil || again != acme {
		t.Errorf("replay: %d, %v; want %d", again, err, acme)
	}
	_, err = c.CreateCompany(ctx, "contract-co-1", contactsapi.CreateCompanyRequest{Name: "Other"})
	wantProblem(t, err, http.StatusConflict, "idempotency_key_reused")
	_, err = c.CreateCompany(ctx, "contract-co-2", contactsapi.CreateCompanyRequest{Name: " "})
	wantProblem(t, err, http.StatusUnprocessableEntity, "validation_failed", contactsapi.FieldCompanyName)

	type company struct {
		ID             int64           `json:"id"`
		Name           string          `json:"name"`
		PrimaryContact json.RawMessage `json:"primary_contact"`
		CustomFields   map[string]any  `json:"custom_fields"`
	}
	var co company
	if err := c.Company(ctx, acme, &co); err != nil || co.Name != "Acme, Inc." || string(co.PrimaryContact) != "null" {
		t.Errorf("company without contacts: %+v, %v", co, err)
	}
	if diff := cmp.Diff(map[string]any{"tier": nil}, co.CustomFields); diff != "" {
		t.Errorf("the company's custom fields (-want +got):\n%s", diff)
	}
	// A company's create carries its custom fields as a contact's does:
	// stored and read back, refused (before the key) by name.
	goldReq := contactsapi.CreateCompanyRequest{Name: "Gold Standard", CustomFields: map[string]json.RawMessage{"tier": json.RawMessage(`"gold"`)}}
	gold, err := c.CreateCompany(ctx, "contract-co-4", goldReq)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Company(ctx, gold, &co); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]any{"tier": "gold"}, co.CustomFields); diff != "" {
		t.Errorf("the gold company's custom fields (-want +got):\n%s", diff)
	}
	for name, custom := range map[string]map[string]json.RawMessage{
		"tier": {"tier": json.RawMessage(`"tin"`)},
		"nope": {"nope": json.RawMessage(`1`)},
	} {
		bad := goldReq
		bad.CustomFields = custom
		_, err := c.CreateCompany(ctx, "contract-co-4", bad)
		wantProblem(t, err, http.StatusUnprocessableEntity, "validation_failed", customfield.Field(name))
	}

	email := "Wile@Acme.test"
	req := contactsapi.CreateContactRequest{FirstName: "Wile", LastName: "Coyote", Email: &email, CompanyID: &acme, Source: "lead",
		CustomFields: map[string]json.RawMessage{"region": json.RawMessage(`"emea"`)}}
	wile, err := c.CreateContact(ctx, "contract-c-1", req)
	if err != nil {
		t.Fatal(err)
	}
	if again, err := c.CreateContact(ctx, "contract-c-1", req); err != nil || again != wile {
		t.Errorf("contact replay: %d, %v; want %d", again, err, wile)
	}
	_, err = c.CreateContact(ctx, "contract-c-2", contactsapi.CreateContactRequest{Source: "lead"})
	wantProblem(t, err, http.StatusUnprocessableEntity, "validation_failed", contactsapi.FieldFirstName, contactsapi.FieldLastName)
	for _, tc := range []struct {
		name   string
		custom map[string]json.RawMessage
		field  string
	}{
		{"not an option", map[string]json.RawMessage{"region": json.RawMessage(`"mars"`)}, "region"},
		{"unknown custom field", map[string]json.RawMessage{"nope": json.RawMessage(`1`)}, "nope"},
		{"wrong type", map[string]json.RawMessage{"erp_id": json.RawMessage(`{"a":1}`)}, "erp_id"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bad := req
			bad.CustomFields = tc.custom
			// The body is checked before the key: a refused body under a
			// used key is still the 422.
			_, err := c.CreateContact(ctx, "contract-c-1", bad)
			wantProblem(t, err, http.StatusUnprocessableEntity, "validation_failed", customfield.Field(tc.field))
		})
	}

	var pc struct {
		ID int64 `json:"id"`
	}
	if err := c.Company(ctx, acme, &co); err != nil || json.Unmarshal(co.PrimaryContact, &pc) != nil || pc.ID != wile {
		t.Errorf("primary contact: %s, %v; want %d", co.PrimaryContact, err, wile)
	}
	var got struct {
		ID           int64          `json:"id"`
		FirstName    string         `json:"first_name"`
		Email        string         `json:"email"`
		CustomFields map[string]any `json:"custom_fields"`
	}
	if err := c.Contact(ctx, wile, &got); err != nil || got.FirstName != "Wile" || got.Email != email {
		t.Errorf("contact: %+v, %v", got, err)
	}
	if diff := cmp.Diff(map[string]any{"region": "emea", "erp_id": nil}, got.CustomFields); diff != "" {
		t.Errorf("the contact's custom fields (-want +got):\n%s", diff)
	}
	for _, unknown := range []func() error{
		func() error { return c.Contact(ctx, 99_999_999, &got) },
		func() error { return c.Company(ctx, 99_999_999, &co) },
	} {
		if err := unknown(); !errors.Is(err, contactsapi.ErrNotFound) {
			t.Errorf("unknown id: %v, want ErrNotFound", err)
		}
	}
	for _, tc := range []struct {
		exists func(context.Context, int64) (bool, error)
		id     int64
		want   bool
	}{{c.ContactExists, wile, true}, {c.ContactExists, 99_999_999, false}, {c.CompanyExists, acme, true}, {c.CompanyExists, 99_999_999, false}} {
		if ok, err := tc.exists(ctx, tc.id); err != nil || ok != tc.want {
			t.Errorf("exists(%d) = %v, %v; want %v", tc.id, ok, err, tc.want)
		}
	}

	road, err := c.CreateContact(ctx, "contract-c-3", contactsapi.CreateContactRequest{FirstName: "Road", LastName: "Runner", Source: "lead"})
	if err != nil {
		t.Fatal(err)
	}
	byID, err := c.ContactsByID(ctx, []int64{road, 99_999_999, wile, road})
	var ids []int64
	for _, raw := range byID {
		var rec struct {
			ID int64 `json:"id"`
		}
		_ = json.Unmarshal(raw, &rec)
		ids = append(ids, rec.ID)
	}
	if diff := cmp.Diff([]int64{min(wile, road), max(wile, road)}, ids); err != nil || diff != "" {
		t.Errorf("contacts by id (-want +got), %v:\n%s", err, diff)
	}
	tooMany := make([]int64, contactsapi.MaxContactsByID+1)
	for i := range tooMany {
		tooMany[i] = int64(i + 1)
	}
	for _, bad := range [][]int64{nil, {0}, tooMany} {
		_, err = c.ContactsByID(ctx, bad)
		wantProblem(t, err, http.StatusUnprocessableEntity, "validation_failed", "ids")
	}

	if l, err := c.MatchContacts(ctx, "wile@acme.TEST"); err != nil || len(l) != 1 {
		t.Errorf("email match: %s, %v", l, err)
	}
	if l, err := c.MatchContacts(ctx, "nobody@acme.test"); err != nil || l == nil || len(l) != 0 {
		t.Errorf("no email match must be empty, not null: %v, %v", l, err)
	}
	if _, err := c.CreateCompany(ctx, "contract-co-3", contactsapi.CreateCompanyRequest{Name: "Acme Holdings International"}); err != nil {
		t.Fatal(err)
	}
	matches, err := c.MatchCompanies(ctx, "ACME inc.", 5)
	if err != nil {
		t.Fatal(err)
	}
	var best struct {
		ID    int64   `json:"id"`
		Score float64 `json:"score"`
	}
	if len(matches) == 0 || json.Unmarshal(matches[0], &best) != nil || best.ID != acme || best.Score != 1 {
		t.Errorf("company match: %s", matches)
	}
	_, err = c.MatchCompanies(ctx, "acme", 0)
	wantProblem(t, err, http.StatusUnprocessableEntity, "validation_failed", "limit")
}

func toAny(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}
