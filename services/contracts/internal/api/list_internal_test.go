package api

import (
	"errors"
	"net/url"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/opencrm/crm/pkg/fault"
	"github.com/opencrm/crm/pkg/list"
	"github.com/opencrm/crm/pkg/problem"
	"github.com/opencrm/crm/services/contracts/internal/contracts"
)

// TestListFilter reads the contract list's query string into the domain's
// filter without a server: the common list parameters, the list's own
// filters, and every bad parameter named at once in one 422.
func TestListFilter(t *testing.T) {
	t.Parallel()
	id, days := int64(2), 30
	first := list.Query{Page: 1, PerPage: list.DefaultPerPage, SortBy: contracts.DefaultContractSort}
	tests := []struct {
		query  string
		want   contracts.ListFilter
		errors []fault.Field
	}{
		{query: "", want: contracts.ListFilter{Query: first}},
		{query: "status=draft,active&deal_id=2&expiring_within=30", want: contracts.ListFilter{Query: first,
			Statuses: []string{"draft", "active"}, DealID: &id, ExpiringWithin: &days}},
		{query: "sort_by=name&sort_dir=desc&per_page=500&page=3", want: contracts.ListFilter{
			Query: list.Query{Page: 3, PerPage: list.MaxPerPage, SortBy: "name", Desc: true}}},
		{query: "status=draft,bogus", errors: []fault.Field{{Field: "status",
			Message: "must be one of draft, active, executed, expired, terminated, archived"}}},
		{query: "sort_by=title", errors: []fault.Field{{Field: "sort_by",
			Message: "must be one of company_name, contract_number, created_at, deal_title, effective_date, name, status, termination_date, updated_at"}}},
		{query: "expiring_within=soon", errors: []fault.Field{{Field: "expiring_within",
			Message: "must be a number of days between 0 and 36500"}}},
		{query: "expiring_within=36501&deal_id=x&page=0", errors: []fault.Field{
			{Field: "page", Message: "must be an integer of at least 1"},
			{Field: "deal_id", Message: "must be a positive integer"},
			{Field: "expiring_within", Message: "must be a number of days between 0 and 36500"}}},
	}
	for _, tc := range tests {
		values, err := url.ParseQuery(tc.query)
		if err != nil {
			t.Fatal(err)
		}
		got, err := listFilter(values)
		if tc.errors != nil {
			var p *problem.Error
			if !errors.As(err, &p) || p.Status != 422 || p.Code != "validation_failed" {
				t.Fatalf("%q: error %v, want a 422 validation_failed", tc.query, err)
			}
			if diff := cmp.Diff(tc.errors, p.Errors); diff != "" {
				t.Errorf("%q errors (-want +got):\n%s", tc.query, diff)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%q: %v", tc.query, err)
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%q filter (-want +got):\n%s", tc.query, diff)
		}
	}
}
