package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/opencrm/crm/pkg/outbox"
)

// TestContactsEventsUnknown: contacts' stream as a newer release may fill
// it: a company.updated with fields this release does not know (at the
// top and in data) still renames the deal's company, and events of types
// it does not know are ignored, each without an error (acknowledged,
// never retried in a loop).
func TestContactsEventsUnknown(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	d := e.createDeal(map[string]any{"title": "Unknowns", "company_id": 100})
	for _, body := range []string{
		`{"id":1,"type":"company.updated","schema_version":1,"aggregate_id":"100","occurred_at":"2026-11-28T10:00:00Z","shard":"eu",
			"data":{"id":100,"name":"Acme Unlimited","updated_at":"2026-11-28T10:00:00.000000Z","domain":"acme.example","size":{"min":10}}}`,
		`{"id":2,"type":"company.renamed","schema_version":1,"aggregate_id":"100","occurred_at":"2026-11-28T10:00:01Z",
			"data":{"id":100,"name":"Should Not Apply","updated_at":"2026-11-28T11:00:00.000000Z"}}`,
		`{"id":3,"type":"company.merged","schema_version":1,"aggregate_id":"100","occurred_at":"2026-11-28T10:00:02Z",
			"data":{"merge_id":4,"survivor_id":100,"merged_ids":[101]}}`,
	} {
		var ev outbox.Event
		if err := json.Unmarshal([]byte(body), &ev); err != nil {
			t.Fatal(err)
		}
		if err := e.store.HandleContactsEvent(context.Background(), ev); err != nil {
			t.Fatalf("%s: %v", ev.Type, err)
		}
	}
	var got dealJSON
	e.data(e.do("GET", path("/deals/%d", d.ID), e.user, nil), http.StatusOK, &got)
	if got.CompanyName == nil || *got.CompanyName != "Acme Unlimited" {
		t.Errorf("company_name = %v, want Acme Unlimited", got.CompanyName)
	}
}
