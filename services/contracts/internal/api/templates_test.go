package api_test

import (
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestTemplateCRUD(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	r := e.do(t, http.MethodPost, "/contract-templates", e.admin, map[string]any{
		"name": "  Standard  ", "content": "<p>Hello {{licensee.company_name}}</p>",
	})
	if r.status != http.StatusCreated {
		t.Fatalf("create: %d %s", r.status, r.body)
	}
	created := r.data(t)
	want := map[string]any{
		"name": "Standard", "content": "<p>Hello {{licensee.company_name}}</p>", "number_prefix": "CTR",
		"default_term_months": float64(36), "header_left": "", "header_center": "", "header_right": "",
		"footer_left": "", "footer_center": "", "footer_right": "", "contracts_count": float64(0),
		"created_by": float64(1),
	}
	for k, v := range want {
		if diff := cmp.Diff(v, created[k]); diff != "" {
			t.Errorf("%s (-want +got):\n%s", k, diff)
		}
	}
	id := strconv.FormatInt(idOf(created), 10)

	r = e.do(t, http.MethodPut, "/contract-templates/"+id, e.admin, map[string]any{
		"number_prefix": "LIC", "default_term_months": 12, "footer_right": "{{ PAGE }}/{{pages}}",
	})
	if r.status != http.StatusOK {
		t.Fatalf("update: %d %s", r.status, r.body)
	}
	up := r.data(t)
	if up["number_prefix"] != "LIC" || up["default_term_months"] != float64(12) || up["name"] != "Standard" ||
		up["content"] != created["content"] || up["footer_right"] != "{{ PAGE }}/{{pages}}" {
		t.Fatalf("update kept/changed wrong fields: %v", up)
	}
	r = e.do(t, http.MethodGet, "/contract-templates", e.admin, nil)
	if r.status != http.StatusOK || len(r.json(t)["data"].([]any)) != 1 {
		t.Fatalf("list: %d %s", r.status, r.body)
	}
	r = e.do(t, http.MethodDelete, "/contract-templates/"+id, e.admin, nil)
	if r.status != http.StatusOK {
		t.Fatalf("delete: %d %s", r.status, r.body)
	}
	wantProblem(t, e.do(t, http.MethodGet, "/contract-templates/"+id, e.admin, nil), http.StatusNotFound, "not_found")
}

func TestTemplateSanitised(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const dataImg = `data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII=`
	in := `<p onclick="alert(1)" style="color: red; background-image: url(http://evil.example/x.png); position: fixed">Hi</p>` +
		`<script>alert(1)</script><iframe src="https://evil.example"></iframe><img src="https://evil.example/t.png" onload="alert(1)">` +
		`<img src="` + dataImg + `" alt="logo"><object data="x"></object><embed src="x"><form action="/x"><input name="a"></form>` +
		`<link rel="stylesheet" href="https://evil.example/a.css"><meta http-equiv="refresh" content="0"><base href="https://evil.example/">` +
		`<a href="https://evil.example">link</a><a href="mailto:legal@acme.example">mail</a><body onload="x()">`
	r := e.do(t, http.MethodPost, "/contract-templates", e.admin, map[string]any{"name": "S", "content": in})
	if r.status != http.StatusCreated {
		t.Fatalf("create: %d %s", r.status, r.body)
	}
	got := r.data(t)["content"].(string)
	for _, bad := range []string{"<script", "alert", "<iframe", "onload", "onclick", "evil.example", "<object", "<embed",
		"<form", "<input", "<link", "<meta", "<base", "url(", "position"} {
		if strings.Contains(got, bad) {
			t.Errorf("sanitised content still contains %q: %s", bad, got)
		}
	}
	for _, keep := range []string{`src="` + dataImg + `"`, `style="color: red"`, `href="mailto:legal@acme.example"`, ">Hi</p>"} {
		if !strings.Contains(got, keep) {
			t.Errorf("sanitised content lost %q: %s", keep, got)
		}
	}
}

// TestTemplateValidation keeps what is about HTTP: the 422 body with its
// messages on create and update, a body that does not decode. Each rule
// of a template is tested in the domain (TestTemplateRefusals).
func TestTemplateValidation(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	id := strconv.FormatInt(e.createTemplate(t, nil), 10)
	tests := []struct {
		name     string
		method   string
		path     string
		body     map[string]any
		fields   []string
		messages []string
	}{
		{"unknown tags everywhere", http.MethodPost, "/contract-templates", map[string]any{
			"name": "x", "content": "<p>{{deal.foo}} {{deal.title}} {{page}}</p>",
			"header_left": "{{ licensee.nope }}", "footer_right": "{{page}} {{contract.bogus}}",
		}, []string{"content", "content", "header_left", "footer_right"},
			[]string{"unknown merge tag {{deal.foo}}", "unknown merge tag {{page}}", "unknown merge tag {{ licensee.nope }}", "unknown merge tag {{contract.bogus}}"}},
		{"term not an integer", http.MethodPost, "/contract-templates", map[string]any{
			"name": "x", "content": "<p>x</p>", "default_term_months": "ten",
		}, []string{"default_term_months"}, nil},
		{"update absurd length", http.MethodPut, "/contract-templates/" + id, map[string]any{"content": `<p style="line-height: 999">x</p>`}, []string{"content"},
			[]string{`style "line-height: 999" is too large: a line height is at most 10 times the font size`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := e.do(t, tc.method, tc.path, e.admin, tc.body)
			wantProblem(t, r, http.StatusUnprocessableEntity, "validation_failed", tc.fields...)
			if tc.messages != nil {
				var got []string
				for _, fe := range r.json(t)["errors"].([]any) {
					got = append(got, fe.(map[string]any)["message"].(string))
				}
				if diff := cmp.Diff(tc.messages, got); diff != "" {
					t.Errorf("messages (-want +got):\n%s", diff)
				}
			}
		})
	}
}

func TestTemplateRoutesAdminOnly(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	id := strconv.FormatInt(e.createTemplate(t, nil), 10)
	routes := []struct{ method, path string }{
		{http.MethodGet, "/contract-templates"},
		{http.MethodPost, "/contract-templates"},
		{http.MethodGet, "/contract-templates/" + id},
		{http.MethodPut, "/contract-templates/" + id},
		{http.MethodDelete, "/contract-templates/" + id},
		{http.MethodGet, "/contract-templates/tags"},
		{http.MethodGet, "/contract-templates/tags/pdf"},
	}
	for _, rt := range routes {
		t.Run(rt.method+" "+rt.path, func(t *testing.T) {
			wantProblem(t, e.do(t, rt.method, rt.path, e.user, map[string]any{"name": "x"}), http.StatusForbidden, "forbidden")
			wantProblem(t, e.do(t, rt.method, rt.path, "", nil), http.StatusUnauthorized, "unauthenticated")
		})
	}
}

func TestTemplateInUse(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.deals.set(1, mergeFor(1, "Deal", "Acme"))
	tpl := e.createTemplate(t, nil)
	e.createContract(t, 1, tpl, nil)
	wantProblem(t, e.do(t, http.MethodDelete, "/contract-templates/"+strconv.FormatInt(tpl, 10), e.admin, nil),
		http.StatusConflict, "template_in_use")
}

func TestTagCatalogue(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	r := e.do(t, http.MethodGet, "/contract-templates/tags", e.admin, nil)
	if r.status != http.StatusOK {
		t.Fatalf("tags: %d %s", r.status, r.body)
	}
	if !strings.HasPrefix(string(r.body), `{"data":{"Licensee":[`) && !strings.Contains(string(r.body), `"data":{"Licensee":[`) {
		t.Fatalf("groups not in catalogue order: %.200s", r.body)
	}
	data := r.data(t)
	for _, g := range []string{"Licensee", "Deal", "Quote", "Contract"} {
		list, ok := data[g].([]any)
		if !ok || len(list) == 0 {
			t.Fatalf("group %s missing", g)
		}
		for _, item := range list {
			m := item.(map[string]any)
			for _, k := range []string{"tag", "label", "description", "example"} {
				if s, _ := m[k].(string); s == "" {
					t.Errorf("%s entry %v lacks %s", g, m, k)
				}
			}
		}
	}
	first := data["Licensee"].([]any)[0].(map[string]any)
	if first["tag"] != "{{licensee.company_name}}" {
		t.Errorf("first tag = %v", first["tag"])
	}
}
