package leadsapitest

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"testing"

	"github.com/opencrm/crm/pkg/contract/leadsapi"
	"github.com/opencrm/crm/pkg/patch"
	"github.com/opencrm/crm/pkg/problem"
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
	runBatch(t, c)
	runDuplicates(t, b, id)
}

// runDuplicates: an address a lead holds (any case) names the oldest such
// lead; an unknown one names nothing; a blank one is a 422 on email.
func runDuplicates(t *testing.T, b Backend, ada int64) {
	ctx := context.Background()
	c := b.Client()
	b.CreateLead(t, "Ada", "Again", "ada@example.com")
	got, err := c.DuplicateOf(ctx, " ADA@Example.com ")
	if err != nil || got == nil || *got != (leadsapi.DuplicateOf{LeadID: ada}) {
		t.Errorf("DuplicateOf(ada) = %+v, %v; want lead %d", got, err, ada)
	}
	if got, err := c.DuplicateOf(ctx, "nobody@example.com"); err != nil || got != nil {
		t.Errorf("DuplicateOf(nobody) = %+v, %v; want nil", got, err)
	}
	var p *problem.Error
	if _, err := c.DuplicateOf(ctx, " "); !errors.As(err, &p) || p.Status != http.StatusUnprocessableEntity ||
		len(p.Errors) != 1 || p.Errors[0].Field != "email" {
		t.Errorf("DuplicateOf(blank): %v, want 422 on email", err)
	}
}

// runBatch: each item is answered as its single create would be, in
// order; a resend replays; another body under a used key is a 409 for
// that item alone.
func runBatch(t *testing.T, c *leadsapi.Client) {
	ctx := context.Background()
	items := []leadsapi.BatchItem{
		{Key: "contract-batch-1", Lead: json.RawMessage(`{"first_name":"Grace","last_name":"Hopper","email":"grace@example.com"}`)},
		{Key: "contract-batch-2", Lead: json.RawMessage(`{"first_name":" ","last_name":"Nobody"}`)},
	}
	res, errs, err := c.CreateBatch(ctx, items)
	if err != nil {
		t.Fatal(err)
	}
	first, err := leadsapi.CreatedID(res[0].Body)
	if res[0].Status != http.StatusCreated || err != nil || errs[0] != nil {
		t.Fatalf("item 1: %d %s %v", res[0].Status, res[0].Body, errs[0])
	}
	var p *problem.Error
	if !errors.As(errs[1], &p) || p.Status != http.StatusUnprocessableEntity || len(p.Errors) != 1 || p.Errors[0].Field != "first_name" {
		t.Errorf("item 2: %d %s, err %v; want a 422 on first_name", res[1].Status, res[1].Body, errs[1])
	}
	items[1] = leadsapi.BatchItem{Key: "contract-batch-1", Lead: json.RawMessage(`{"first_name":"Other","last_name":"Body"}`)}
	res, errs, err = c.CreateBatch(ctx, items)
	if err != nil {
		t.Fatal(err)
	}
	again, err := leadsapi.CreatedID(res[0].Body)
	if res[0].Status != http.StatusCreated || !res[0].Replayed || err != nil || again != first {
		t.Errorf("resend: %d replayed=%v %s, want the same lead %d", res[0].Status, res[0].Replayed, res[0].Body, first)
	}
	if !errors.As(errs[1], &p) || p.Status != http.StatusConflict || p.Code != "idempotency_key_reused" {
		t.Errorf("other body under a used key: %d %s", res[1].Status, res[1].Body)
	}
	if res[0].ID != first {
		t.Errorf("resend: id %d, want %d", res[0].ID, first)
	}

	// CreateLeads is the same exchange with typed leads and ids.
	created, err := c.CreateLeads(ctx, []leadsapi.NewLead{
		{Key: "contract-batch-1", Lead: leadsapi.LeadInput{FirstName: "Grace", LastName: "Hopper", Email: patch.Of("grace@example.com")}},
		{Key: "contract-batch-3", Lead: leadsapi.LeadInput{FirstName: "", LastName: "Nobody"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if created[0].ID != first || created[0].Err != nil {
		t.Errorf("CreateLeads resend: %+v, want lead %d", created[0], first)
	}
	if !errors.As(created[1].Err, &p) || p.Status != http.StatusUnprocessableEntity || created[1].ID != 0 {
		t.Errorf("CreateLeads without a first name: %+v, want a 422", created[1])
	}
}
