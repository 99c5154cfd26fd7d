package contacts_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/opencrm/crm/pkg/customfield"
	"github.com/opencrm/crm/services/contacts/internal/contacts"
)

// TestContactCustomFieldRules: a write's custom fields are checked with
// its other fields (every problem at once), the record holds only
// non-empty canonical values, a required field must be given on create
// and cannot be cleared, and an update keeps the names it leaves out.
func TestContactCustomFieldRules(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := newFakeStore()
	st.defs = []customfield.Definition{
		{Name: "erp_id", Type: customfield.Text, Required: true},
		{Name: "score", Type: customfield.Number},
		{Name: "owner2", Type: customfield.User},
	}
	svc := newService(t, st)

	_, err := svc.CreateContact(ctx, decode[contacts.ContactInput](t, map[string]any{"first_name": "",
		"last_name": "L", "custom_fields": map[string]any{"score": "x", "nope": 1, "owner2": unknownID}}))
	want := []string{"first_name", "custom_fields.nope", "custom_fields.owner2", "custom_fields.score", "custom_fields.erp_id"}
	if diff := cmp.Diff(want, invalidFields(t, err)); diff != "" {
		t.Errorf("create: invalid fields (-want +got):\n%s", diff)
	}

	c, err := svc.CreateContact(ctx, decode[contacts.ContactInput](t, map[string]any{"first_name": "A",
		"last_name": "L", "custom_fields": map[string]any{"erp_id": " E-1 ", "score": 1.50, "owner2": knownUser}}))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]any{"erp_id": " E-1 ", "score": "1.5", "owner2": int64(knownUser)}, c.CustomFields); diff != "" {
		t.Errorf("held values (-want +got):\n%s", diff)
	}

	u, err := svc.UpdateContact(ctx, c.ID, decode[contacts.ContactInput](t, map[string]any{"first_name": "A",
		"last_name": "L", "custom_fields": map[string]any{"score": nil}}))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]any{"erp_id": " E-1 ", "owner2": int64(knownUser)}, u.CustomFields); diff != "" {
		t.Errorf("after clearing score (-want +got):\n%s", diff)
	}
	_, err = svc.UpdateContact(ctx, c.ID, decode[contacts.ContactInput](t, map[string]any{"first_name": "A",
		"last_name": "L", "custom_fields": map[string]any{"erp_id": ""}}))
	if diff := cmp.Diff([]string{"custom_fields.erp_id"}, invalidFields(t, err)); diff != "" {
		t.Errorf("clearing a required field: invalid fields (-want +got):\n%s", diff)
	}
}
