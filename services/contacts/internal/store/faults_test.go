package store

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/opencrm/crm/pkg/fault"
	"github.com/opencrm/crm/services/contacts/internal/contacts"
)

// TestStoreFaults: the store answers a missing record or a reference gone
// since validation with the fault the edge renders (404 not_found naming
// the record, 422 on company_id), never a driver error.
func TestStoreFaults(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, s := newTestStore(t)
	const missing = 424242
	keep := func(*contacts.Contact) error { return nil }
	keepCompany := func(*contacts.Company) error { return nil }
	gone := int64(missing)
	tests := []struct {
		name string
		call func() error
		want *fault.Error
	}{
		{"get contact", func() error { _, err := s.GetContact(ctx, missing); return err }, fault.NotFound("contact")},
		{"update contact", func() error { _, err := s.UpdateContact(ctx, missing, keep); return err }, fault.NotFound("contact")},
		{"delete contact", func() error { return s.DeleteContact(ctx, missing) }, fault.NotFound("contact")},
		{"contact owner", func() error { _, err := s.ContactOwner(ctx, missing); return err }, fault.NotFound("contact")},
		{"get company", func() error { _, err := s.GetCompany(ctx, missing); return err }, fault.NotFound("company")},
		{"update company", func() error { _, err := s.UpdateCompany(ctx, missing, keepCompany); return err }, fault.NotFound("company")},
		{"delete company", func() error { return s.DeleteCompany(ctx, missing) }, fault.NotFound("company")},
		{"company owner", func() error { _, err := s.CompanyOwner(ctx, missing); return err }, fault.NotFound("company")},
		{"create with a company gone", func() error {
			_, err := s.CreateContact(ctx, contacts.Contact{FirstName: "A", LastName: "B", Status: contacts.StatusActive,
				CompanyID: &gone})
			return err
		}, fault.Invalid("company_id", "does not exist")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := tt.call()
			var got *fault.Error
			if !errors.As(err, &got) {
				t.Fatalf("error %v, want %v", err, tt.want)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("fault (-want +got):\n%s", diff)
			}
		})
	}
	if p, err := s.PrimaryContact(ctx, missing); p != nil || err != nil {
		t.Errorf("primary contact of a company without contacts: %v, %v; want none", p, err)
	}
}
