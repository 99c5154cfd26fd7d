package e2e

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestRenderBoundsThroughTheGateway walks the bounded-rendering rules with
// the real gateway, contracts service and render worker: absurd CSS lengths
// refused on save, documents over the page cap refused 422 (cheaply before
// printing, or by the capped print), a user whose renders were refused for
// their content answered 429 with Retry-After until the cooldown ends, and
// the signed copy that must parse as a PDF and comes back as one.
func TestRenderBoundsThroughTheGateway(t *testing.T) {
	t.Parallel()
	adm := admin(t)
	// A user of its own: the cooldown below holds this user's slots, not
	// the admin's that other tests render with.
	email := uniq("renderer") + "@bounds.test"
	must(t, http.StatusCreated)(adm.Do("POST", "/users", map[string]any{
		"name": "Rita Render", "email": email, "password": "correct horse battery", "role": "user",
	}))
	tok, err := stack.Client().Login(email, "correct horse battery")
	if err != nil {
		t.Fatal(err)
	}
	user := stack.Client().With(tok)

	absurd := must(t, http.StatusUnprocessableEntity)(adm.Do("POST", "/contract-templates", map[string]any{
		"name": uniq("Tall "), "content": `<div style="height: 9999mm">{{deal.title}}</div>`,
	}))
	wantErrors := []any{map[string]any{"field": "content",
		"message": `style "height: 9999mm" is too large: lengths are at most 297mm (the height of an A4 page)`}}
	if diff := cmp.Diff(wantErrors, absurd.JSON["errors"]); diff != "" {
		t.Errorf("absurd length (-want +got):\n%s", diff)
	}

	co := must(t, http.StatusCreated)(adm.Do("POST", "/companies", map[string]any{"name": uniq("Bounded ")}))
	deal := must(t, http.StatusCreated)(adm.Do("POST", "/deals", map[string]any{"title": "Long read", "value": "10.00", "company_id": co.ID()}))
	contract := func(content string) int64 {
		t.Helper()
		tpl := must(t, http.StatusCreated)(adm.Do("POST", "/contract-templates", map[string]any{"name": uniq("Bounds "), "content": content}))
		return must(t, http.StatusCreated)(user.Do("POST", "/contracts", map[string]any{
			"deal_id": deal.ID(), "template_id": tpl.ID(), "title": "Bounds"})).ID()
	}
	// 3,000 page breaks: refused before any tab is taken. 400: printed up
	// to the cap of 300 pages, then refused.
	thousands := contract("<p>{{deal.title}}</p>" + strings.Repeat(`<p>x</p><hr class="page-break">`, 3000))
	hundreds := contract("<p>{{deal.title}}</p>" + strings.Repeat(`<p>x</p><hr class="page-break">`, 400))
	normal := contract("<h1>Agreement</h1><p>{{deal.title}} for {{licensee.company_name}}.</p>")

	wantTooLong := map[string]any{"type": "/docs/problems#document_too_long", "title": "Unprocessable Entity", "status": 422.0,
		"code": "document_too_long", "detail": "the document has more than 300 pages, the most that can be rendered; shorten it"}
	for name, id := range map[string]int64{"3,000 pages": thousands, "400 pages": hundreds} {
		r := must(t, http.StatusUnprocessableEntity)(user.Do("GET", fmt.Sprintf("/contracts/%d/pdf", id), nil))
		got := r.JSON
		delete(got, "request_id")
		if diff := cmp.Diff(wantTooLong, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", name, diff)
		}
		if ct := r.Header.Get("Content-Type"); ct != "application/problem+json" {
			t.Errorf("%s: Content-Type %q", name, ct)
		}
	}
	// Both refusals hold the user's two slots for the cooldown.
	busy := must(t, http.StatusTooManyRequests)(user.Do("GET", fmt.Sprintf("/contracts/%d/pdf", normal), nil))
	if busy.JSON["code"] != "rate_limited" || busy.Header.Get("Retry-After") == "" {
		t.Errorf("busy user: %s Retry-After %q", busy.Body, busy.Header.Get("Retry-After"))
	}
	var pdf []byte
	eventually(t, "the normal PDF renders once the cooldown ends", func() error {
		r, err := user.Do("GET", fmt.Sprintf("/contracts/%d/pdf", normal), nil)
		if err != nil {
			return err
		}
		if r.Status != http.StatusOK {
			return fmt.Errorf("status %d: %s", r.Status, r.Body)
		}
		pdf = r.Body
		return nil
	})
	// The merge-tag catalogue is rendered the same way (same client, same
	// bounds); it is an admin route.
	tags := must(t, http.StatusOK)(adm.Do("GET", "/contract-templates/tags/pdf", nil))
	if !bytes.HasPrefix(tags.Body, []byte("%PDF-")) {
		t.Errorf("catalogue is not a PDF: %.40q", tags.Body)
	}

	// Signed copies: HTML dressed as a PDF is refused; a real PDF uploaded
	// under an .html name is stored and served as a .pdf attachment.
	path := fmt.Sprintf("/contracts/%d/executed", normal)
	fake := must(t, http.StatusUnprocessableEntity)(user.Upload(path, "file", "signed.pdf",
		[]byte("%PDF-1.7\n<html><body><script>alert(1)</script></body></html>\n%%EOF\n")))
	if diff := cmp.Diff([]any{map[string]any{"field": "file",
		"message": "is not a readable PDF document (it has a PDF header but does not parse as one)"}}, fake.JSON["errors"]); diff != "" {
		t.Errorf("fake PDF (-want +got):\n%s", diff)
	}
	up := must(t, http.StatusCreated)(user.Upload(path, "file", "signed.html", pdf))
	if f, _ := up.Data()["executed_file"].(map[string]any); f["filename"] != "signed.html.pdf" {
		t.Errorf("stored as %v, want signed.html.pdf", f["filename"])
	}
	d := must(t, http.StatusOK)(user.Do("GET", path, nil))
	for k, v := range map[string]string{
		"Content-Type": "application/pdf", "X-Content-Type-Options": "nosniff",
		"Content-Disposition": `attachment; filename="signed.html.pdf"; filename*=UTF-8''signed.html.pdf`,
	} {
		if got := d.Header.Get(k); got != v {
			t.Errorf("%s = %q, want %q", k, got, v)
		}
	}
	if !bytes.Equal(d.Body, pdf) {
		t.Error("downloaded signed copy differs from the upload")
	}
}

// TestPathsAndPagesThroughTheGateway: a non-canonical path is a 404
// problem at the gateway (never a service's raw redirect), and a page past
// every integer range is an empty page with the true totals.
func TestPathsAndPagesThroughTheGateway(t *testing.T) {
	t.Parallel()
	adm := admin(t)
	c := must(t, http.StatusCreated)(adm.Do("POST", "/contacts", map[string]any{"first_name": "Canon", "last_name": "Ical"}))
	// Sent with a plain client: these paths are not in the API, so the
	// OpenAPI exchange check would rightly call them undocumented.
	for _, p := range []string{
		fmt.Sprintf("/api/contacts/%d/.", c.ID()), fmt.Sprintf("/api/contacts/%d/", c.ID()),
		fmt.Sprintf("/api/contacts//%d", c.ID()), "/api/contracts/1%2Fexecuted",
		fmt.Sprintf("/api/contacts/%d/notes/..", c.ID()),
	} {
		req, err := http.NewRequest(http.MethodGet, stack.URLs["gateway"]+p, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+adm.Token)
		resp, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound || resp.Header.Get("Content-Type") != "application/problem+json" || resp.Header.Get("Location") != "" {
			t.Errorf("%s: %d %q Location %q: %s", p, resp.StatusCode, resp.Header.Get("Content-Type"), resp.Header.Get("Location"), body)
		}
	}

	all := must(t, http.StatusOK)(adm.Do("GET", "/contacts?per_page=1", nil))
	total := all.JSON["total"]
	for _, page := range []string{"85899346", "99999999999999999999999"} {
		r := must(t, http.StatusOK)(adm.Do("GET", "/contacts?page="+page, nil))
		if data, _ := r.JSON["data"].([]any); len(data) != 0 || r.JSON["total"] == nil {
			t.Errorf("page %s: %s", page, r.Body)
		}
		// Other tests add contacts meanwhile: the total only grows.
		if r.JSON["total"].(float64) < total.(float64) {
			t.Errorf("page %s: total %v, want at least %v", page, r.JSON["total"], total)
		}
	}
}
