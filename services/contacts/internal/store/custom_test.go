package store

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/opencrm/crm/pkg/contract/propertyapi"
	"github.com/opencrm/crm/pkg/customfield"
	"github.com/opencrm/crm/pkg/fault"
	"github.com/opencrm/crm/services/contacts/internal/contacts"
)

// TestWritesRecheckHeldDefinitions: values checked before a definition
// changed are checked again inside the write against the definitions it
// holds, so a deleted field's value or an old type's is never stored.
func TestWritesRecheckHeldDefinitions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d, s := newTestStore(t)
	props := customfield.Store{DB: d, Stream: Stream}
	obj := customfield.Object{Name: propertyapi.Contacts, Table: "contacts"}
	if _, err := props.Create(ctx, obj, propertyapi.PropertyInput{Name: "score", Label: "Score", Type: customfield.Number}); err != nil {
		t.Fatal(err)
	}
	c, err := s.CreateContact(ctx, contacts.Contact{FirstName: "A", LastName: "B", Status: contacts.StatusActive,
		CustomFields: map[string]any{"score": "3"}})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]any{"score": "3"}, c.CustomFields); diff != "" {
		t.Errorf("created (-want +got):\n%s", diff)
	}

	// Checked as a number, written after score became a date.
	if err := props.Delete(ctx, obj, "score"); err != nil {
		t.Fatal(err)
	}
	if _, err := props.Create(ctx, obj, propertyapi.PropertyInput{Name: "score", Label: "Score", Type: customfield.Date}); err != nil {
		t.Fatal(err)
	}
	_, err = s.CreateContact(ctx, contacts.Contact{FirstName: "A", LastName: "B", Status: contacts.StatusActive,
		CustomFields: map[string]any{"score": "4"}})
	var f *fault.Error
	if !errors.As(err, &f) || f.Kind != fault.KindInvalid || len(f.Fields) != 1 || f.Fields[0].Field != "custom_fields.score" {
		t.Fatalf("create with a stale value: %v", err)
	}
	_, err = s.UpdateContact(ctx, c.ID, func(cur *contacts.Contact) error {
		cur.CustomFields = map[string]any{"gone": "x"}
		return nil
	})
	if !errors.As(err, &f) || f.Kind != fault.KindInvalid || f.Fields[0].Field != "custom_fields.gone" {
		t.Fatalf("update with a deleted field's value: %v", err)
	}
}
