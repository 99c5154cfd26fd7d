package api_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/opencrm/crm/services/contracts/internal/api"
	"github.com/opencrm/crm/services/contracts/internal/contracts"
	"github.com/opencrm/crm/services/contracts/internal/store"
)

func TestCreateContract(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	merge := mergeFor(5, "Enterprise <script>alert(1)</script>", `Acme "GmbH" & Co`)
	e.deals.set(5, merge)
	tpl := e.createTemplate(t, map[string]any{"number_prefix": "LIC", "default_term_months": 24})
	c := e.createContract(t, 5, tpl, map[string]any{"start_date": "2026-01-31", "auto_renew": true, "partner_ref": "PO-1"})

	year := time.Now().UTC().Year()
	want := map[string]any{
		"contract_number": fmt.Sprintf("LIC-%d-00001", year), "title": "Licence agreement", "name": "Licence agreement",
		"deal_id": float64(5), "deal_title": "Enterprise <script>alert(1)</script>", "company_id": float64(50),
		"company_name": `Acme "GmbH" & Co`, "template_id": float64(tpl), "template_name": "Standard licence",
		"status": "draft", "start_date": "2026-01-31", "end_date": nil, "effective_date": "2026-01-31",
		"termination_date": "2028-01-31", "term_months": float64(24), "auto_renew": true, "partner_ref": "PO-1",
		"unresolved_tags": []any{"{{licensee.phone}}"}, "executed_file": nil, "created_by": float64(2),
	}
	for k, v := range want {
		if diff := cmp.Diff(v, c[k]); diff != "" {
			t.Errorf("%s (-want +got):\n%s", k, diff)
		}
	}
	content := c["content"].(string)
	for _, s := range []string{
		"<h1>Licence agreement</h1>",
		"Acme &#34;GmbH&#34; &amp; Co", "represented by Jane Doe",
		"Enterprise &lt;script&gt;alert(1)&lt;/script&gt; worth USD 12,500.50",
		"<td>Licence &lt;b&gt;</td><td>10</td><td>1,000.00</td><td>10,000.00</td>",
		fmt.Sprintf("Number LIC-%d-00001 from 2026-01-31 to 2028-01-31. Ref PO-1. Phone .", year),
	} {
		if !strings.Contains(content, s) {
			t.Errorf("content lacks %q:\n%s", s, content)
		}
	}
	for _, k := range []string{"created_at", "updated_at"} {
		if s := c[k].(string); len(s) != len("2026-11-22T03:10:26.123456Z") || !strings.HasSuffix(s, "Z") {
			t.Errorf("%s = %q, want microsecond UTC timestamp", k, s)
		}
	}
	// Defaults: no dates → effective today, termination + term.
	c2 := e.createContract(t, 5, tpl, map[string]any{"end_date": "2030-06-30"})
	today := time.Now().UTC().Format(time.DateOnly)
	if c2["effective_date"] != today || c2["termination_date"] != "2030-06-30" || c2["contract_number"] != fmt.Sprintf("LIC-%d-00002", year) {
		t.Errorf("second contract dates/number: %v %v %v", c2["effective_date"], c2["termination_date"], c2["contract_number"])
	}
	got := e.do(t, http.MethodGet, "/contracts/"+strconv.FormatInt(idOf(c), 10), e.user, nil)
	if got.status != http.StatusOK || got.data(t)["contract_number"] != c["contract_number"] {
		t.Fatalf("get: %d %s", got.status, got.body)
	}
}

// TestCreateContractBadInput keeps what is about HTTP: the 422 body of a
// refused input, a body that does not decode, a missing token. Each rule
// of the input is tested in the domain (TestCreateContractRefusals).
func TestCreateContractBadInput(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.deals.set(1, mergeFor(1, "Deal", "Acme"))
	tpl := e.createTemplate(t, nil)
	tests := []struct {
		name   string
		body   map[string]any
		fields []string
	}{
		{"missing everything", map[string]any{}, []string{"deal_id", "template_id", "title"}},
		{"unknown both", map[string]any{"deal_id": 999, "template_id": 999, "title": "x"}, []string{"template_id", "deal_id"}},
		{"deal id not a number", map[string]any{"deal_id": "one", "template_id": tpl, "title": "x"}, []string{"deal_id"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			wantProblem(t, e.do(t, http.MethodPost, "/contracts", e.user, tc.body), http.StatusUnprocessableEntity, "validation_failed", tc.fields...)
		})
	}
	t.Run("malformed json", func(t *testing.T) {
		req := httptest.NewRequest(http.MethodPost, e.srv.URL+"/contracts", strings.NewReader("{"))
		req.RequestURI = ""
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+e.user)
		wantProblem(t, e.send(t, req), http.StatusBadRequest, "malformed_json")
	})
	t.Run("no token", func(t *testing.T) {
		wantProblem(t, e.do(t, http.MethodPost, "/contracts", "", map[string]any{}), http.StatusUnauthorized, "unauthenticated")
	})
}

func TestCreateContractDealsDown(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tpl := e.createTemplate(t, nil)
	down := httptest.NewServer(http.NotFoundHandler())
	down.Close() // nothing listens any more
	svc, err := contracts.NewService(contracts.Deps{Store: store.New(e.db), Deals: dealsDownClient(down.URL), Renderer: noRenderer{}})
	if err != nil {
		t.Fatal(err)
	}
	h, err := api.New(svc, e.iss.Verifier(t), mustActivity(t, e), e.db)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	e2 := *e
	e2.srv = srv
	r := e2.do(t, http.MethodPost, "/contracts", e.user, map[string]any{"deal_id": 1, "template_id": tpl, "title": "x"})
	wantProblem(t, r, http.StatusServiceUnavailable, "upstream_unavailable")
	if r.header.Get("Retry-After") == "" {
		t.Error("no Retry-After on 503")
	}
}

func TestContractNumbersConcurrent(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.deals.set(1, mergeFor(1, "Deal", "Acme"))
	tpl := e.createTemplate(t, map[string]any{"number_prefix": "PAR"})
	const n = 50
	var wg sync.WaitGroup
	numbers := make([]string, n)
	errs := make([]string, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := e.do(t, http.MethodPost, "/contracts", e.user, map[string]any{"deal_id": 1, "template_id": tpl, "title": "c" + strconv.Itoa(i)})
			if r.status != http.StatusCreated {
				errs[i] = fmt.Sprintf("%d %s", r.status, r.body)
				return
			}
			numbers[i] = r.data(t)["contract_number"].(string)
		}()
	}
	wg.Wait()
	for _, e := range errs {
		if e != "" {
			t.Fatalf("create failed: %s", e)
		}
	}
	sort.Strings(numbers)
	year := time.Now().UTC().Year()
	for i, got := range numbers {
		if want := fmt.Sprintf("PAR-%d-%05d", year, i+1); got != want {
			t.Fatalf("numbers[%d] = %s, want %s (all: %v)", i, got, want, numbers)
		}
	}
}

func TestListContracts(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.deals.set(1, mergeFor(1, "Alpha deal", "Zeta Corp"))
	e.deals.set(2, mergeFor(2, "Beta deal", "Acme"))
	tpl := e.createTemplate(t, nil)
	today := time.Now().UTC()
	in10 := today.AddDate(0, 0, 10).Format(time.DateOnly)
	in40 := today.AddDate(0, 0, 40).Format(time.DateOnly)
	a := e.createContract(t, 1, tpl, map[string]any{"title": "Charlie", "end_date": in10})
	b := e.createContract(t, 2, tpl, map[string]any{"title": "alpha", "end_date": in40, "partner_ref": "REF-xyz"})
	c := e.createContract(t, 2, tpl, map[string]any{"title": "Bravo", "end_date": in10})
	for _, id := range []int64{idOf(a), idOf(b)} {
		if r := e.do(t, http.MethodPut, fmt.Sprintf("/contracts/%d", id), e.user, map[string]any{"deal_id": nil, "status": "active"}); r.status != 422 {
			t.Fatalf("PUT without deal_id should be 422, got %d", r.status)
		}
	}
	setStatus(t, e, a, "active")
	setStatus(t, e, b, "active")

	ids := func(r response) []int64 {
		t.Helper()
		if r.status != http.StatusOK {
			t.Fatalf("list: %d %s", r.status, r.body)
		}
		var out []int64
		for _, item := range r.json(t)["data"].([]any) {
			out = append(out, idOf(item.(map[string]any)))
		}
		return out
	}
	A, B, C := idOf(a), idOf(b), idOf(c)
	tests := []struct {
		query string
		want  []int64
	}{
		{"", []int64{A, B, C}},
		{"sort_dir=desc", []int64{C, B, A}},
		{"sort_by=name", []int64{B, C, A}},
		{"sort_by=company_name", []int64{B, C, A}},
		{"sort_by=deal_title&sort_dir=DESC", []int64{C, B, A}},
		{"sort_by=status", []int64{A, B, C}},
		{"sort_by=termination_date", []int64{A, C, B}},
		{"sort_by=effective_date", []int64{A, B, C}},
		{"sort_by=created_at&sort_dir=desc", []int64{C, B, A}},
		{"sort_by=contract_number", []int64{A, B, C}},
		{"status=draft", []int64{C}},
		{"status=draft,active", []int64{A, B, C}},
		{"status=expired", nil},
		{"deal_id=2", []int64{B, C}},
		{"expiring_within=30", []int64{A}},
		{"expiring_within=60", []int64{A, B}},
		{"search=zeta", []int64{A}},
		{"search=REF-X", []int64{B}},
		{"search=" + url.QueryEscape("100%"), nil},
		{"per_page=2&page=2", []int64{C}},
		{"per_page=2&page=9", nil},
	}
	for _, tc := range tests {
		t.Run(tc.query, func(t *testing.T) {
			r := e.do(t, http.MethodGet, "/contracts?"+tc.query, e.user, nil)
			if diff := cmp.Diff(tc.want, ids(r)); diff != "" {
				t.Errorf("ids (-want +got):\n%s", diff)
			}
		})
	}
	r := e.do(t, http.MethodGet, "/contracts?per_page=2", e.user, nil)
	m := r.json(t)
	if m["total"] != float64(3) || m["last_page"] != float64(2) || m["per_page"] != float64(2) || m["current_page"] != float64(1) {
		t.Errorf("envelope: %v", m)
	}
	bad := []struct {
		query  string
		fields []string
	}{
		{"status=draft,bogus", []string{"status"}},
		{"sort_by=title", []string{"sort_by"}},
		{"expiring_within=soon", []string{"expiring_within"}},
		{"deal_id=x&page=0", []string{"page", "deal_id"}},
	}
	for _, tc := range bad {
		t.Run("bad "+tc.query, func(t *testing.T) {
			wantProblem(t, e.do(t, http.MethodGet, "/contracts?"+tc.query, e.user, nil), http.StatusUnprocessableEntity, "validation_failed", tc.fields...)
		})
	}
}

func setStatus(t *testing.T, e *env, c map[string]any, status string) map[string]any {
	t.Helper()
	r := e.do(t, http.MethodPut, fmt.Sprintf("/contracts/%d", idOf(c)), e.user, map[string]any{
		"deal_id": c["deal_id"], "template_id": c["template_id"], "title": c["title"], "status": status,
	})
	if r.status != http.StatusOK {
		t.Fatalf("set status %s: %d %s", status, r.status, r.body)
	}
	return r.data(t)
}

func TestStatusTransitions(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.deals.set(1, mergeFor(1, "Deal", "Acme"))
	tpl := e.createTemplate(t, nil)
	type step struct {
		to string
		ok bool
	}
	// Every path of the transition table is walked in the domain
	// (TestUpdateContractTransitions); here one allowed and one refused
	// move show their answers.
	paths := [][]step{
		{{"active", true}, {"draft", false}},
	}
	for i, path := range paths {
		t.Run(strconv.Itoa(i), func(t *testing.T) {
			c := e.createContract(t, 1, tpl, nil)
			for _, s := range path {
				r := e.do(t, http.MethodPut, fmt.Sprintf("/contracts/%d", idOf(c)), e.user, map[string]any{
					"deal_id": 1, "template_id": tpl, "title": "Licence agreement", "status": s.to,
				})
				if !s.ok {
					wantProblem(t, r, http.StatusConflict, "invalid_transition")
					continue
				}
				if r.status != http.StatusOK || r.data(t)["status"] != s.to {
					t.Fatalf("to %s: %d %s", s.to, r.status, r.body)
				}
			}
		})
	}
	t.Run("absurd length in content", func(t *testing.T) {
		c := e.createContract(t, 1, tpl, nil)
		r := e.do(t, http.MethodPut, fmt.Sprintf("/contracts/%d", idOf(c)), e.user, map[string]any{
			"deal_id": 1, "template_id": tpl, "title": "x", "content": `<p>x</p><div style="padding-top: 40cm">y</div>`,
		})
		wantProblem(t, r, http.StatusUnprocessableEntity, "validation_failed", "content")
		want := []any{map[string]any{"field": "content",
			"message": `style "padding-top: 40cm" is too large: lengths are at most 297mm (the height of an A4 page)`}}
		if diff := cmp.Diff(want, r.json(t)["errors"]); diff != "" {
			t.Errorf("errors (-want +got):\n%s", diff)
		}
	})
	t.Run("bad status value", func(t *testing.T) {
		c := e.createContract(t, 1, tpl, nil)
		r := e.do(t, http.MethodPut, fmt.Sprintf("/contracts/%d", idOf(c)), e.user, map[string]any{
			"deal_id": 1, "template_id": tpl, "title": "x", "status": "signed",
		})
		wantProblem(t, r, http.StatusUnprocessableEntity, "validation_failed", "status")
	})
}

func TestUpdateContract(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.deals.set(1, mergeFor(1, "Deal one", "Acme"))
	e.deals.set(2, mergeFor(2, "Deal two", "Globex"))
	tpl := e.createTemplate(t, nil)
	c := e.createContract(t, 1, tpl, map[string]any{"start_date": "2026-01-01", "partner_ref": "P1"})
	path := fmt.Sprintf("/contracts/%d", idOf(c))

	// Absent optional fields keep their value; dates recompute.
	r := e.do(t, http.MethodPut, path, e.user, map[string]any{"deal_id": 1, "template_id": tpl, "title": "Renamed", "end_date": "2026-12-31"})
	if r.status != http.StatusOK {
		t.Fatalf("update: %d %s", r.status, r.body)
	}
	u := r.data(t)
	if u["title"] != "Renamed" || u["name"] != "Renamed" || u["partner_ref"] != "P1" || u["termination_date"] != "2026-12-31" || u["content"] != c["content"] {
		t.Fatalf("update result: %v", u)
	}
	// null clears; end before start is 422.
	wantProblem(t, e.do(t, http.MethodPut, path, e.user, map[string]any{"deal_id": 1, "template_id": tpl, "title": "x", "end_date": "2025-01-01"}),
		http.StatusUnprocessableEntity, "validation_failed", "end_date")
	r = e.do(t, http.MethodPut, path, e.user, map[string]any{"deal_id": 1, "template_id": tpl, "title": "x", "partner_ref": nil, "end_date": nil})
	if u := r.data(t); u["partner_ref"] != nil || u["end_date"] != nil || u["termination_date"] != "2029-01-01" {
		t.Fatalf("clear: %v", u)
	}
	// Changing the deal rebuilds the content from the new deal.
	r = e.do(t, http.MethodPut, path, e.user, map[string]any{"deal_id": 2, "template_id": tpl, "title": "x"})
	if u := r.data(t); u["deal_title"] != "Deal two" || u["company_name"] != "Globex" || !strings.Contains(u["content"].(string), "Globex") {
		t.Fatalf("deal change: %v", u)
	}
	wantProblem(t, e.do(t, http.MethodPut, path, e.user, map[string]any{"deal_id": 77, "template_id": tpl, "title": "x"}),
		http.StatusUnprocessableEntity, "validation_failed", "deal_id")
	// Given content is sanitised and its tags resolved.
	r = e.do(t, http.MethodPut, path, e.user, map[string]any{"deal_id": 2, "template_id": tpl, "title": "x",
		"content": `<p onclick="x()">Custom for {{licensee.company_name}}</p><script>x</script>`})
	if got := r.data(t)["content"]; got != "<p>Custom for Globex</p>" {
		t.Fatalf("custom content = %q", got)
	}
	// Frozen once executed.
	setStatus(t, e, map[string]any{"id": c["id"], "deal_id": 2, "template_id": float64(tpl), "title": "x"}, "active")
	setStatus(t, e, map[string]any{"id": c["id"], "deal_id": 2, "template_id": float64(tpl), "title": "x"}, "executed")
	wantProblem(t, e.do(t, http.MethodPut, path, e.user, map[string]any{"deal_id": 2, "template_id": tpl, "title": "x", "content": "<p>changed</p>"}),
		http.StatusConflict, "conflict")
	wantProblem(t, e.do(t, http.MethodPut, path+"/regenerate", e.user, nil), http.StatusConflict, "conflict")
	// A title change alone is still allowed.
	if r := e.do(t, http.MethodPut, path, e.user, map[string]any{"deal_id": 2, "template_id": tpl, "title": "Final"}); r.status != http.StatusOK {
		t.Fatalf("title on executed: %d %s", r.status, r.body)
	}
	wantProblem(t, e.do(t, http.MethodPut, "/contracts/999999", e.user, map[string]any{"deal_id": 2, "template_id": tpl, "title": "x"}),
		http.StatusNotFound, "not_found")
	// Delete.
	if r := e.do(t, http.MethodDelete, path, e.user, nil); r.status != http.StatusOK {
		t.Fatalf("delete: %d %s", r.status, r.body)
	}
	wantProblem(t, e.do(t, http.MethodGet, path, e.user, nil), http.StatusNotFound, "not_found")
}

func TestRegenerateAfterDealChange(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	m := mergeFor(1, "Old title", "Acme")
	delete(m, "quote")
	e.deals.set(1, m)
	tpl := e.createTemplate(t, nil)
	c := e.createContract(t, 1, tpl, map[string]any{"partner_ref": "P"})
	if got := c["unresolved_tags"].([]any); !slices.Contains(got, any("{{quote.line_items}}")) {
		t.Fatalf("unresolved before = %v", got)
	}
	m2 := mergeFor(1, "New title", "Acme Renamed")
	m2["company"].(map[string]any)["phone"] = "+49 30 1"
	e.deals.set(1, m2)
	r := e.do(t, http.MethodPut, fmt.Sprintf("/contracts/%d/regenerate", idOf(c)), e.user, nil)
	if r.status != http.StatusOK {
		t.Fatalf("regenerate: %d %s", r.status, r.body)
	}
	u := r.data(t)
	content := u["content"].(string)
	if !strings.Contains(content, "New title") || !strings.Contains(content, "Acme Renamed") || strings.Contains(content, "Old title") {
		t.Fatalf("content not rebuilt: %s", content)
	}
	if diff := cmp.Diff([]any{}, u["unresolved_tags"]); diff != "" {
		t.Errorf("unresolved after (-want +got):\n%s", diff)
	}
	if u["deal_title"] != "New title" || u["company_name"] != "Acme Renamed" {
		t.Errorf("denormalised fields: %v %v", u["deal_title"], u["company_name"])
	}
	delete(e.deals.deals, 1)
	wantProblem(t, e.do(t, http.MethodPut, fmt.Sprintf("/contracts/%d/regenerate", idOf(c)), e.user, nil),
		http.StatusUnprocessableEntity, "validation_failed", "deal_id")
}

func TestNotesAndTasks(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.deals.set(1, mergeFor(1, "Deal", "Acme"))
	c := e.createContract(t, 1, e.createTemplate(t, nil), nil)
	base := fmt.Sprintf("/contracts/%d", idOf(c))
	if r := e.do(t, http.MethodPost, base+"/notes", e.user, map[string]any{"content": "Called legal"}); r.status != http.StatusCreated {
		t.Fatalf("note: %d %s", r.status, r.body)
	}
	wantProblem(t, e.do(t, http.MethodPost, base+"/notes", e.user, map[string]any{}), http.StatusUnprocessableEntity, "validation_failed", "content")
	r := e.do(t, http.MethodGet, base+"/notes", e.user, nil)
	if notes := r.json(t)["data"].([]any); len(notes) != 1 || notes[0].(map[string]any)["content"] != "Called legal" {
		t.Fatalf("notes: %s", r.body)
	}
	r = e.do(t, http.MethodPost, base+"/tasks", e.user, map[string]any{"title": "Send for signature", "due_date": "2026-02-01"})
	if r.status != http.StatusCreated || r.data(t)["contract_id"] != c["id"] {
		t.Fatalf("task: %d %s", r.status, r.body)
	}
	tid := idOf(r.data(t))
	r = e.do(t, http.MethodPut, fmt.Sprintf("%s/tasks/%d", base, tid), e.user, map[string]any{"title": "Send", "status": "completed"})
	if r.status != http.StatusOK || r.data(t)["status"] != "completed" {
		t.Fatalf("task update: %d %s", r.status, r.body)
	}
	r = e.do(t, http.MethodGet, base+"/tasks", e.user, nil)
	if tasks := r.json(t)["data"].([]any); len(tasks) != 1 {
		t.Fatalf("tasks: %s", r.body)
	}
	wantProblem(t, e.do(t, http.MethodGet, "/contracts/999999/notes", e.user, nil), http.StatusNotFound, "not_found")
	if r := e.do(t, http.MethodDelete, fmt.Sprintf("%s/tasks/%d", base, tid), e.user, nil); r.status != http.StatusOK {
		t.Fatalf("task delete: %d %s", r.status, r.body)
	}
}

func TestDocumentsWithoutWorker(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.deals.set(1, mergeFor(1, "Deal", "Acme"))
	c := e.createContract(t, 1, e.createTemplate(t, nil), nil)
	for _, tc := range []struct{ path, token string }{
		{fmt.Sprintf("/contracts/%d/pdf", idOf(c)), e.user},
		{fmt.Sprintf("/contracts/%d/docx", idOf(c)), e.user},
		{"/contract-templates/tags/pdf", e.admin},
	} {
		t.Run(tc.path, func(t *testing.T) {
			r := e.do(t, http.MethodGet, tc.path, tc.token, nil)
			wantProblem(t, r, http.StatusServiceUnavailable, "upstream_unavailable")
			if r.header.Get("Retry-After") == "" {
				t.Error("no Retry-After")
			}
		})
	}
	wantProblem(t, e.do(t, http.MethodGet, "/contracts/999999/pdf", e.user, nil), http.StatusNotFound, "not_found")
}
