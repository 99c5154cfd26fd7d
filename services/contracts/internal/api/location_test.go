package api_test

import (
	"fmt"
	"net/http"
	"testing"
)

// TestCreatedLocation: every 201 names where the new record is read, under
// the gateway's /api prefix: a template or a contract at its own path, a
// signed copy at the path it was posted to, a note or a task under its
// contract.
func TestCreatedLocation(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.deals.set(1, mergeFor(1, "Deal", "Acme"))
	tpl := e.createTemplate(t, nil)
	c := e.createContract(t, 1, tpl, nil)
	cid := idOf(c)
	base := fmt.Sprintf("/contracts/%d", cid)

	tests := []struct {
		name string
		send func() response
		want func(r response) string
	}{
		{
			name: "template",
			send: func() response {
				return e.do(t, http.MethodPost, "/contract-templates", e.admin, map[string]any{"name": "Other", "content": "<p>x</p>"})
			},
			want: func(r response) string { return fmt.Sprintf("/api/contract-templates/%d", idOf(r.data(t))) },
		},
		{
			name: "contract",
			send: func() response {
				return e.do(t, http.MethodPost, "/contracts", e.user, map[string]any{"deal_id": 1, "template_id": tpl, "title": "Second"})
			},
			want: func(r response) string { return fmt.Sprintf("/api/contracts/%d", idOf(r.data(t))) },
		},
		{
			name: "signed copy",
			send: func() response { return e.uploadPDF(t, cid, e.user, "signed.pdf", pdfBytes("signed")) },
			want: func(response) string { return fmt.Sprintf("/api/contracts/%d/executed", cid) },
		},
		{
			name: "note",
			send: func() response {
				return e.do(t, http.MethodPost, base+"/notes", e.user, map[string]any{"content": "Called legal"})
			},
			want: func(r response) string { return fmt.Sprintf("/api%s/notes/%d", base, idOf(r.data(t))) },
		},
		{
			name: "task",
			send: func() response {
				return e.do(t, http.MethodPost, base+"/tasks", e.user, map[string]any{"title": "Send for signature"})
			},
			want: func(r response) string { return fmt.Sprintf("/api%s/tasks/%d", base, idOf(r.data(t))) },
		},
	}
	for _, tc := range tests {
		r := tc.send()
		if r.status != http.StatusCreated {
			t.Fatalf("%s: %d %s", tc.name, r.status, r.body)
		}
		if got, want := r.header.Get("Location"), tc.want(r); got != want {
			t.Errorf("%s: Location = %q, want %q", tc.name, got, want)
		}
	}
}
