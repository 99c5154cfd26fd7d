package api_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/opencrm/crm/pkg/contract/dealsapi"
	"github.com/opencrm/crm/pkg/contract/dealsapi/dealsapitest"
	"github.com/opencrm/crm/services/contacts/internal/api"
)

// TestTaskDealChecked: a contact's task may name a deal only if the deals
// context knows it, asked through the Deals interface (here the deals
// contract's fake).
func TestTaskDealChecked(t *testing.T) {
	t.Parallel()
	_, deals := dealsapitest.NewFake(secret, dealsapitest.References{}).Start(t)
	stage := dealsapitest.Stages[0]
	deal, err := deals.CreateDeal(context.Background(), "", dealsapi.CreateDealRequest{Title: "Big one", Value: "100", StageID: &stage, SourceLeadID: 1})
	if err != nil {
		t.Fatal(err)
	}
	e := newEnvWith(t, func(c *api.Config) { c.Deals = deals })
	r := e.do(t, "POST", "/contacts", e.user, map[string]any{"first_name": "Ada", "last_name": "Lovelace"})
	wantStatus(t, r, 201)
	tasks := fmt.Sprintf("/contacts/%d/tasks", id(t, r))
	tests := []struct {
		name   string
		dealID int64
		status int
	}{
		{"known deal", deal, 201},
		{"unknown deal", deal + 1000, 422},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := e.do(t, "POST", tasks, e.user, map[string]any{"title": "call", "deal_id": tt.dealID})
			if tt.status == 422 {
				wantProblem(t, r, 422, "validation_failed", "deal_id")
				return
			}
			wantStatus(t, r, tt.status)
		})
	}
}
