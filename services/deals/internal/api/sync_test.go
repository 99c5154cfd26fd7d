package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/opencrm/crm/pkg/outbox"
)

// TestSyncBadInput: updated_since that is not RFC 3339, and a cursor
// outside the sync order, are 422s naming the parameter.
func TestSyncBadInput(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tests := []struct{ query, field string }{
		{"?updated_since=2026-01-02", "updated_since"},
		{"?updated_since=2026-01-02T25:00:00Z", "updated_since"},
		{"?updated_since=now", "updated_since"},
		{"?updated_since=2026-01-02T10:00:00Z&sort_by=updated_at&sort_dir=desc&after_id=1", "after_id"},
	}
	for _, tt := range tests {
		r := e.do("GET", "/deals"+tt.query, e.user, nil)
		wantProblem(t, r, 422, "validation_failed", tt.field)
		var p struct{ Errors []map[string]string }
		if err := json.Unmarshal(r.Body, &p); err != nil {
			t.Fatal(err)
		}
		if len(p.Errors) != 1 || p.Errors[0]["field"] != tt.field || p.Errors[0]["message"] == "" {
			t.Errorf("%s: errors %v", tt.query, p.Errors)
		}
	}
}

// TestSyncSeesEveryDealChange: an edit, a stage change and a rename of the
// deal's company (copied into company_name from contacts' event) each move
// the deal's updated_at, so a sync since before them returns exactly those
// deals in the order they changed; an event that leaves the name as it was
// moves nothing.
func TestSyncSeesEveryDealChange(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	edited := e.createDeal(map[string]any{"title": "Edited"})
	staged := e.createDeal(map[string]any{"title": "Staged"})
	renamed := e.createDeal(map[string]any{"title": "Company renamed", "company_id": 100})
	sameName := e.createDeal(map[string]any{"title": "Company touched", "company_id": 101})
	time.Sleep(2 * time.Millisecond)
	since := time.Now().UTC().Format("2006-01-02T15:04:05.000000Z")

	e.data(e.do("PUT", path("/deals/%d", edited.ID), e.user, map[string]any{"title": "Edited again"}), http.StatusOK, nil)
	e.data(e.do("PUT", path("/deals/%d", staged.ID), e.user, map[string]any{"title": "Staged", "stage_id": e.stages()["Proposal"].ID}), http.StatusOK, nil)
	for _, ev := range []outbox.Event{
		{ID: 1, Type: "company.updated", AggregateID: "100", Data: json.RawMessage(`{"id":100,"name":"Acme Corp","updated_at":"2026-02-01T00:00:00.000000Z"}`)},
		{ID: 2, Type: "company.updated", AggregateID: "101", Data: json.RawMessage(`{"id":101,"name":"Globex","updated_at":"2026-02-01T00:00:00.000000Z"}`)},
	} {
		if err := e.store.HandleContactsEvent(context.Background(), ev); err != nil {
			t.Fatal(err)
		}
	}

	p := e.list("?sort_by=updated_at&sort_dir=asc&updated_since="+url.QueryEscape(since), e.user)
	var got []int64
	for _, d := range p.Data {
		got = append(got, d.ID)
	}
	if diff := cmp.Diff([]int64{edited.ID, staged.ID, renamed.ID}, got); diff != "" {
		t.Errorf("deals changed since %s (deal %d only re-versioned) (-want +got):\n%s", since, sameName.ID, diff)
	}
}
