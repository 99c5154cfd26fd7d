package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/opencrm/crm/pkg/contract/dealsapi"
)

var timestamp = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$`)

func TestDealLifecycle(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	st := e.stages()

	d := e.createDeal(map[string]any{
		"title": "  Acme renewal ", "value": 1234.5, "company_id": 100, "contact_id": 500,
		"expected_close_date": "2026-12-31", "source_lead_id": 42,
	})
	want := dealJSON{
		ID: d.ID, Title: "Acme renewal", Value: "1234.50", Currency: "USD",
		StageID: st["Prospecting"].ID, StageName: "Prospecting", Status: "open",
		CompanyID: ptr[int64](100), CompanyName: ptr("Acme"), ContactID: ptr[int64](500),
		ExpectedCloseDate: ptr("2026-12-31"), AssignedTo: ptr[int64](userID), AssignedToName: ptr("Uma User"),
		SourceLeadID: ptr[int64](42),
	}
	if diff := cmp.Diff(want, d, cmpopts.IgnoreFields(dealJSON{}, "CreatedAt", "UpdatedAt")); diff != "" {
		t.Errorf("created deal (-want +got):\n%s", diff)
	}
	if !timestamp.MatchString(d.CreatedAt) || !timestamp.MatchString(d.UpdatedAt) {
		t.Errorf("timestamps %q %q not in the platform format", d.CreatedAt, d.UpdatedAt)
	}

	var got dealJSON
	e.data(e.do("GET", path("/deals/%d", d.ID), e.other, nil), http.StatusOK, &got)
	if diff := cmp.Diff(d, got); diff != "" {
		t.Errorf("read deal (-want +got):\n%s", diff)
	}

	// Moving to Closed Won makes it won; absent fields keep their value.
	var won dealJSON
	e.data(e.do("PUT", path("/deals/%d", d.ID), e.user, map[string]any{"title": "Acme renewal", "stage_id": st["Closed Won"].ID}), http.StatusOK, &won)
	if won.Status != "won" || won.StageName != "Closed Won" || won.Value != "1234.50" || *won.CompanyName != "Acme" {
		t.Errorf("after move to Closed Won: %+v", won)
	}
	// Setting status lost moves the deal to the first lost stage.
	var lost dealJSON
	e.data(e.do("PUT", path("/deals/%d", d.ID), e.user, map[string]any{"title": "Acme renewal", "status": "lost"}), http.StatusOK, &lost)
	if lost.Status != "lost" || lost.StageID != st["Closed Lost"].ID {
		t.Errorf("after status lost: %+v", lost)
	}
	// null clears optional fields; value as a string; currency change.
	var cleared dealJSON
	e.data(e.do("PUT", path("/deals/%d", d.ID), e.user, map[string]any{
		"title": "Acme", "company_id": nil, "contact_id": nil, "expected_close_date": nil, "assigned_to": nil,
		"value": "1500", "currency": "jpy", "stage_id": st["Negotiation"].ID,
	}), http.StatusOK, &cleared)
	want = dealJSON{
		ID: d.ID, Title: "Acme", Value: "1500.00", Currency: "JPY", StageID: st["Negotiation"].ID,
		StageName: "Negotiation", Status: "open", SourceLeadID: ptr[int64](42),
	}
	if diff := cmp.Diff(want, cleared, cmpopts.IgnoreFields(dealJSON{}, "CreatedAt", "UpdatedAt")); diff != "" {
		t.Errorf("cleared deal (-want +got):\n%s", diff)
	}

	r := e.do("DELETE", path("/deals/%d", d.ID), e.user, nil)
	if r.Status != http.StatusOK || !strings.Contains(string(r.Body), `"success":true`) {
		t.Fatalf("delete: %d %s", r.Status, r.Body)
	}
	wantProblem(t, e.do("GET", path("/deals/%d", d.ID), e.user, nil), http.StatusNotFound, "not_found")

	// Every change was published through the outbox, in order.
	rows, err := e.db.Query(context.Background(), `SELECT type FROM outbox WHERE stream = 'crm:events:deals' ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		types = append(types, s)
	}
	wantTypes := []string{"deal.created", "deal.updated", "deal.updated", "deal.updated", "deal.deleted"}
	if diff := cmp.Diff(wantTypes, types); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

func TestDealMoneyFormats(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tests := []struct {
		value    any
		currency string
		want     string
	}{
		{"1234.5", "USD", "1234.50"},
		{1234.56, "EUR", "1234.56"},
		{"0", "", "0.00"},
		// 2 places in every currency, whatever its minor unit.
		{1200, "JPY", "1200.00"},
		{"1.25", "KWD", "1.25"},
		{"1.250", "KWD", "1.25"},
		{"0.1", "CLF", "0.10"},
		{"1.000", "USD", "1.00"},
		{"1e3", "USD", "1000.00"},
		{nil, "USD", "0.00"},
	}
	for _, tc := range tests {
		body := map[string]any{"title": "Money", "value": tc.value}
		if tc.currency != "" {
			body["currency"] = tc.currency
		}
		d := e.createDeal(body)
		if d.Value != tc.want {
			t.Errorf("value %v %s → %q, want %q", tc.value, tc.currency, d.Value, tc.want)
		}
	}
}

func TestDealValidation(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	d := e.createDeal(map[string]any{"title": "Existing", "value": "10.50"})
	tests := []struct {
		name   string
		method string
		path   string
		body   any
		fields []string
	}{
		{"missing title", "POST", "/deals", map[string]any{"value": 1}, []string{"title"}},
		{"blank title", "POST", "/deals", map[string]any{"title": "  "}, []string{"title"}},
		{"long title", "POST", "/deals", map[string]any{"title": strings.Repeat("x", 256)}, []string{"title"}},
		{"negative value", "POST", "/deals", map[string]any{"title": "x", "value": -1}, []string{"value"}},
		{"negative value string", "POST", "/deals", map[string]any{"title": "x", "value": "-0.01"}, []string{"value"}},
		{"non-numeric value", "POST", "/deals", map[string]any{"title": "x", "value": "abc"}, []string{"value"}},
		{"boolean value", "POST", "/deals", map[string]any{"title": "x", "value": true}, []string{"value"}},
		{"three decimals USD", "POST", "/deals", map[string]any{"title": "x", "value": "1.234"}, []string{"value"}},
		{"decimals JPY", "POST", "/deals", map[string]any{"title": "x", "value": "10.5", "currency": "JPY"}, []string{"value"}},
		{"four decimals KWD", "POST", "/deals", map[string]any{"title": "x", "value": "1.2345", "currency": "KWD"}, []string{"value"}},
		{"three decimals KWD", "POST", "/deals", map[string]any{"title": "x", "value": "1.255", "currency": "KWD"}, []string{"value"}},
		{"three decimals CLF", "POST", "/deals", map[string]any{"title": "x", "value": "0.125", "currency": "CLF"}, []string{"value"}},
		{"huge value", "POST", "/deals", map[string]any{"title": "x", "value": "1000000000000000"}, []string{"value"}},
		{"giant exponent", "POST", "/deals", map[string]any{"title": "x", "value": "1e999999999"}, []string{"value"}},
		{"unknown currency", "POST", "/deals", map[string]any{"title": "x", "currency": "ABC"}, []string{"currency"}},
		{"unknown stage", "POST", "/deals", map[string]any{"title": "x", "stage_id": 999999}, []string{"stage_id"}},
		{"stage not integer", "POST", "/deals", map[string]any{"title": "x", "stage_id": "one"}, []string{"stage_id"}},
		{"unknown company", "POST", "/deals", map[string]any{"title": "x", "company_id": 999}, []string{"company_id"}},
		{"unknown contact", "POST", "/deals", map[string]any{"title": "x", "contact_id": 999}, []string{"contact_id"}},
		{"unknown assignee", "POST", "/deals", map[string]any{"title": "x", "assigned_to": 999}, []string{"assigned_to"}},
		{"unknown source lead", "POST", "/deals", map[string]any{"title": "x", "source_lead_id": 999}, []string{"source_lead_id"}},
		{"source lead not positive", "POST", "/deals", map[string]any{"title": "x", "source_lead_id": 0}, []string{"source_lead_id"}},
		{"update to an unknown source lead", "PUT", path("/deals/%d", d.ID), map[string]any{"title": "x", "source_lead_id": 998}, []string{"source_lead_id"}},
		{"bad status", "POST", "/deals", map[string]any{"title": "x", "status": "pending"}, []string{"status"}},
		{"status against stage", "POST", "/deals", map[string]any{"title": "x", "status": "won", "stage_id": 1}, []string{"status"}},
		{"bad date", "POST", "/deals", map[string]any{"title": "x", "expected_close_date": "31/12/2026"}, []string{"expected_close_date"}},
		{"many at once", "POST", "/deals", map[string]any{"value": "x", "currency": "ZZZ", "company_id": 999},
			[]string{"title", "currency", "company_id"}},
		{"update without title", "PUT", path("/deals/%d", d.ID), map[string]any{"value": 5}, []string{"title"}},
		{"update clears stage", "PUT", path("/deals/%d", d.ID), map[string]any{"title": "x", "stage_id": nil}, []string{"stage_id"}},
		{"update currency that cannot hold value", "PUT", path("/deals/%d", d.ID), map[string]any{"title": "x", "currency": "JPY"}, []string{"value"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			wantProblem(t, e.do(tc.method, tc.path, e.user, tc.body), http.StatusUnprocessableEntity, "validation_failed", tc.fields...)
		})
	}
	// Nothing above was stored.
	var page struct{ Total int }
	r := e.do("GET", "/deals", e.user, nil)
	if err := json.Unmarshal(r.Body, &page); err != nil || page.Total != 1 {
		t.Errorf("deals after rejected writes: %s", r.Body)
	}
}

func TestDealErrors(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tests := []struct {
		name, method, path, token string
		body                      any
		status                    int
		code                      string
	}{
		{"no token", "GET", "/deals", "", nil, 401, "unauthenticated"},
		{"unknown deal", "GET", "/deals/999999", e.user, nil, 404, "not_found"},
		{"non-numeric id", "GET", "/deals/abc", e.user, nil, 404, "not_found"},
		{"unknown deal update", "PUT", "/deals/999999", e.user, map[string]any{"title": "x"}, 404, "not_found"},
		{"unknown deal delete", "DELETE", "/deals/999999", e.user, nil, 404, "not_found"},
		{"unknown route", "GET", "/nothing", e.user, nil, 404, "not_found"},
		{"malformed json", "POST", "/deals", e.user, `{"title":`, 400, "malformed_json"},
		{"not an object", "POST", "/deals", e.user, `[1]`, 400, "malformed_json"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			wantProblem(t, e.do(tc.method, tc.path, tc.token, tc.body), tc.status, tc.code)
		})
	}
	t.Run("wrong content type", func(t *testing.T) {
		r := e.do("POST", "/deals", e.user, `{"title":"x"}`, "Content-Type", "text/plain")
		wantProblem(t, r, http.StatusUnsupportedMediaType, "unsupported_media_type")
	})
}

func TestContactsDown(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpt{contactsDown: true})
	wantProblem(t, e.do("POST", "/deals", e.user, map[string]any{"title": "x", "company_id": 100}), http.StatusServiceUnavailable, "upstream_unavailable")
	wantProblem(t, e.do("POST", "/deals", e.user, map[string]any{"title": "x", "contact_id": 500}), http.StatusServiceUnavailable, "upstream_unavailable")
	// A deal without references does not need contacts.
	d := e.createDeal(map[string]any{"title": "standalone"})
	e.data(e.internal("GET", dealsapi.MergePath(d.ID), nil), http.StatusOK, nil)
}
