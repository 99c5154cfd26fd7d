package api_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"
)

type pageJSON struct {
	Data        []dealJSON `json:"data"`
	CurrentPage int        `json:"current_page"`
	LastPage    int        `json:"last_page"`
	PerPage     int        `json:"per_page"`
	Total       int        `json:"total"`
}

func (e *env) list(query, token string) pageJSON {
	e.t.Helper()
	r := e.do("GET", "/deals"+query, token, nil)
	if r.Status != http.StatusOK {
		e.t.Fatalf("GET /deals%s: %d %s", query, r.Status, r.Body)
	}
	var p pageJSON
	if err := json.Unmarshal(r.Body, &p); err != nil {
		e.t.Fatal(err)
	}
	return p
}

func titles(p pageJSON) []string {
	out := []string{}
	for _, d := range p.Data {
		out = append(out, d.Title)
	}
	return out
}

func TestDealList(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	st := e.stages()
	e.createDeal(map[string]any{"title": "Alpha", "value": "300", "company_id": 100, "stage_id": st["Proposal"].ID, "expected_close_date": "2026-03-01"})
	e.createDeal(map[string]any{"title": "bravo", "value": "20.5", "company_id": 101, "contact_id": 501, "stage_id": st["Closed Won"].ID, "assigned_to": otherID})
	e.createDeal(map[string]any{"title": "Charlie 100%", "value": "1000", "stage_id": st["Prospecting"].ID, "expected_close_date": "2026-01-15", "assigned_to": adminID})
	e.createDeal(map[string]any{"title": "Delta", "value": "5", "company_id": 100, "contact_id": 500, "stage_id": st["Closed Lost"].ID, "assigned_to": nil})

	tests := []struct {
		query string
		token string
		want  []string
	}{
		{"", e.user, []string{"Alpha", "bravo", "Charlie 100%", "Delta"}},
		{"?sort_by=title&sort_dir=desc", e.user, []string{"Delta", "Charlie 100%", "bravo", "Alpha"}},
		{"?sort_by=value", e.user, []string{"Delta", "bravo", "Alpha", "Charlie 100%"}},
		{"?sort_by=stage", e.user, []string{"Charlie 100%", "Alpha", "bravo", "Delta"}},
		{"?sort_by=expected_close_date", e.user, []string{"Charlie 100%", "Alpha", "bravo", "Delta"}},
		{"?sort_by=created_at&sort_dir=DESC", e.user, []string{"Delta", "Charlie 100%", "bravo", "Alpha"}},
		{"?search=ACME", e.user, []string{"Alpha", "Delta"}},
		{"?search=brav", e.user, []string{"bravo"}},
		{"?search=100%25", e.user, []string{"Charlie 100%"}},
		{"?search=_", e.user, []string{}},
		{path("?stage_id=%d", st["Proposal"].ID), e.user, []string{"Alpha"}},
		{"?status=won,lost", e.user, []string{"bravo", "Delta"}},
		{"?status=open", e.user, []string{"Alpha", "Charlie 100%"}},
		{"?company_id=100", e.user, []string{"Alpha", "Delta"}},
		{"?contact_id=501", e.user, []string{"bravo"}},
		{path("?assigned_to=%d", adminID), e.user, []string{"Charlie 100%"}},
		{"?scope=me", e.user, []string{"Alpha"}},
		{"?scope=me", e.other, []string{"bravo"}},
		{"?scope=team", e.user, []string{"Alpha", "Charlie 100%"}},
		{"?scope=team", e.other, []string{"bravo"}},
		{"?scope=company", e.other, []string{"Alpha", "bravo", "Charlie 100%", "Delta"}},
	}
	for _, tc := range tests {
		t.Run(tc.query, func(t *testing.T) {
			p := e.list(tc.query, tc.token)
			if diff := cmp.Diff(tc.want, titles(p)); diff != "" {
				t.Errorf("titles (-want +got):\n%s", diff)
			}
			if p.Total != len(tc.want) {
				t.Errorf("total = %d, want %d", p.Total, len(tc.want))
			}
		})
	}

	t.Run("pagination", func(t *testing.T) {
		p := e.list("?per_page=3&page=2", e.user)
		want := pageJSON{Data: p.Data, CurrentPage: 2, LastPage: 2, PerPage: 3, Total: 4}
		if diff := cmp.Diff(want, p); diff != "" || len(p.Data) != 1 || p.Data[0].Title != "Delta" {
			t.Errorf("page 2 (-want +got):\n%s %v", diff, titles(p))
		}
		past := e.list("?per_page=3&page=9", e.user)
		if len(past.Data) != 0 || past.Total != 4 || past.LastPage != 2 {
			t.Errorf("past the end = %+v", past)
		}
		if got := e.list("?per_page=500", e.user).PerPage; got != 100 {
			t.Errorf("per_page 500 clamps to %d, want 100", got)
		}
	})
	t.Run("company names in rows", func(t *testing.T) {
		p := e.list("?company_id=101", e.user)
		if len(p.Data) != 1 || p.Data[0].CompanyName == nil || *p.Data[0].CompanyName != "Globex" {
			t.Errorf("rows = %+v", p.Data)
		}
	})
}

func TestDealListErrors(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tests := []struct {
		query  string
		fields []string
	}{
		{"?sort_by=owner", []string{"sort_by"}},
		{"?sort_dir=up", []string{"sort_dir"}},
		{"?page=0", []string{"page"}},
		{"?per_page=x", []string{"per_page"}},
		{"?stage_id=x", []string{"stage_id"}},
		{"?company_id=-1", []string{"company_id"}},
		{"?status=pending", []string{"status"}},
		{"?scope=world", []string{"scope"}},
		{"?date_from=2026-13-01", []string{"date_from"}},
		{"?page=x&sort_by=y", []string{"page", "sort_by"}},
	}
	for _, tc := range tests {
		t.Run(tc.query, func(t *testing.T) {
			wantProblem(t, e.do("GET", "/deals"+tc.query, e.user, nil), http.StatusUnprocessableEntity, "validation_failed", tc.fields...)
		})
	}
}
