package leadsapitest

import (
	"context"
	"errors"
	"testing"

	"github.com/opencrm/crm/pkg/contract/leadsapi"
)

// Backend is a leads service the contract runs against.
type Backend interface {
	Client() *leadsapi.Client
	// CreateLead stores a lead with that name and email and returns its id.
	CreateLead(t testing.TB, first, last, email string) int64
}

// Run is leads' lookup contract: the fake runs it in its own test; leads
// runs it against its real handlers.
func Run(t *testing.T, b Backend) {
	ctx := context.Background()
	c := b.Client()
	id := b.CreateLead(t, "Ada", "Lovelace", "ada@example.com")
	var got struct {
		ID        int64   `json:"id"`
		FirstName string  `json:"first_name"`
		Email     *string `json:"email"`
	}
	if err := c.Lead(ctx, id, &got); err != nil {
		t.Fatal(err)
	}
	if got.ID != id || got.FirstName != "Ada" || got.Email == nil || *got.Email != "ada@example.com" {
		t.Errorf("Lead = %+v", got)
	}
	if ok, err := c.LeadExists(ctx, id); err != nil || !ok {
		t.Errorf("LeadExists(%d) = %v, %v", id, ok, err)
	}
	if ok, err := c.LeadExists(ctx, id+1_000_000); err != nil || ok {
		t.Errorf("LeadExists(unknown) = %v, %v", ok, err)
	}
	if err := c.Lead(ctx, id+1_000_000, &got); !errors.Is(err, leadsapi.ErrNotFound) {
		t.Errorf("Lead(unknown): %v, want ErrNotFound", err)
	}
}
