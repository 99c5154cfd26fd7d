package api_test

import (
	"fmt"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestSyncBadInput: updated_since that is not RFC 3339, and a cursor
// outside the sync order, are 422s naming the parameter.
func TestSyncBadInput(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	rfc := "must be an RFC 3339 timestamp such as 2026-01-02T15:04:05Z"
	tests := []struct{ query, field, message string }{
		{"?updated_since=2026-01-02", "updated_since", rfc},
		{"?updated_since=02/01/2026", "updated_since", rfc},
		{"?updated_since=2026-01-02T10:00:00Z&after_id=9", "after_id", "requires updated_since, sort_by=updated_at and sort_dir=asc"},
	}
	for _, tt := range tests {
		r := e.do(t, http.MethodGet, "/contracts"+tt.query, e.user, nil)
		wantProblem(t, r, http.StatusUnprocessableEntity, "validation_failed", tt.field)
		want := []any{map[string]any{"field": tt.field, "message": tt.message}}
		if diff := cmp.Diff(want, r.json(t)["errors"]); diff != "" {
			t.Errorf("%s errors (-want +got):\n%s", tt.query, diff)
		}
	}
}

// TestSyncSeesEveryContractChange: an edit, a status change, a signed-copy
// upload and its deletion each move the contract's updated_at, so a sync
// since before them returns exactly those contracts in the order they
// last changed, and paging with the cursor returns each once.
func TestSyncSeesEveryContractChange(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.deals.set(1, mergeFor(1, "Deal", "Acme"))
	tpl := e.createTemplate(t, nil)
	edited := e.createContract(t, 1, tpl, nil)
	activated := e.createContract(t, 1, tpl, nil)
	signed := e.createContract(t, 1, tpl, nil)
	unsigned := e.createContract(t, 1, tpl, nil)
	untouched := e.createContract(t, 1, tpl, nil)
	if r := e.uploadPDF(t, idOf(unsigned), e.user, "signed.pdf", pdfBytes("signed")); r.status != http.StatusCreated {
		t.Fatalf("upload: %d %s", r.status, r.body)
	}
	time.Sleep(2 * time.Millisecond)
	since := time.Now().UTC().Format("2006-01-02T15:04:05.000000Z")

	if r := e.do(t, http.MethodPut, fmt.Sprintf("/contracts/%d", idOf(edited)), e.user, map[string]any{
		"deal_id": 1, "template_id": tpl, "title": "Renamed licence"}); r.status != http.StatusOK {
		t.Fatalf("edit: %d %s", r.status, r.body)
	}
	setStatus(t, e, activated, "active")
	if r := e.uploadPDF(t, idOf(signed), e.user, "signed.pdf", pdfBytes("signed")); r.status != http.StatusCreated {
		t.Fatalf("upload: %d %s", r.status, r.body)
	}
	if r := e.do(t, http.MethodDelete, fmt.Sprintf("/contracts/%d/executed", idOf(unsigned)), e.admin, nil); r.status != http.StatusOK {
		t.Fatalf("delete signed copy: %d %s", r.status, r.body)
	}

	want := []float64{float64(idOf(edited)), float64(idOf(activated)), float64(idOf(signed)), float64(idOf(unsigned))}
	var got []float64
	cursor := url.Values{"updated_since": {since}, "sort_by": {"updated_at"}, "sort_dir": {"asc"}, "per_page": {"3"}}
	for page := 0; page < 5; page++ {
		r := e.do(t, http.MethodGet, "/contracts?"+cursor.Encode(), e.user, nil)
		if r.status != http.StatusOK {
			t.Fatalf("sync: %d %s", r.status, r.body)
		}
		data := r.json(t)["data"].([]any)
		for _, d := range data {
			got = append(got, d.(map[string]any)["id"].(float64))
		}
		if len(data) < 3 {
			break
		}
		last := data[len(data)-1].(map[string]any)
		cursor.Set("updated_since", last["updated_at"].(string))
		cursor.Set("after_id", fmt.Sprint(last["id"]))
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("contracts changed since %s (contract %d untouched) (-want +got):\n%s", since, idOf(untouched), diff)
	}
}
