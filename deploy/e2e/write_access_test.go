package e2e

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// scopeWorld is a sales organisation: an owner and a teammate in team A,
// a user of team B, and a user of team A limited to their own records.
type scopeWorld struct {
	admin, owner, teammate, otherTeam, ownScope *Client
	ownerID                                     int64
	templateID                                  int64
}

// newScopeWorld creates the users; each has a fresh login.
func newScopeWorld(t *testing.T) *scopeWorld {
	t.Helper()
	adm := admin(t)
	teamA := must(t, http.StatusCreated)(adm.Do("POST", "/teams", map[string]any{"name": uniq("Team A ")})).ID()
	teamB := must(t, http.StatusCreated)(adm.Do("POST", "/teams", map[string]any{"name": uniq("Team B ")})).ID()
	user := func(team int64, scope string) (int64, *Client) {
		email := uniq(scope) + "@scope.test"
		id := must(t, http.StatusCreated)(adm.Do("POST", "/users", map[string]any{"name": "Scoped " + scope, "email": email,
			"password": "correct horse battery", "team_id": team, "edit_scope": scope})).ID()
		tok, err := stack.Client().Login(email, "correct horse battery")
		if err != nil {
			t.Fatal(err)
		}
		return id, stack.Client().With(tok)
	}
	w := &scopeWorld{admin: adm}
	w.ownerID, w.owner = user(teamA, "own")
	_, w.teammate = user(teamA, "team")
	_, w.otherTeam = user(teamB, "team")
	lastID, ownScope := user(teamA, "own")
	w.ownScope = ownScope
	w.templateID = must(t, http.StatusCreated)(adm.Do("POST", "/contract-templates", map[string]any{
		"name": uniq("Scope "), "content": "<p>{{deal.title}}</p>"})).ID()
	// Each service learns the users from identity's events, in order:
	// once it knows the last one, it knows them all.
	for _, p := range []string{"/contacts", "/leads", "/deals"} {
		eventually(t, p+" knows the users", func() error {
			body := map[string]any{"first_name": "Probe", "last_name": "Probe",
				"email": uniq("probe") + "@scope.test", "assigned_to": lastID}
			if p == "/deals" {
				body = map[string]any{"title": "Probe", "assigned_to": lastID}
			}
			r, err := w.owner.Do("POST", p, body)
			if err != nil {
				return err
			}
			if r.Status != http.StatusCreated {
				return fmt.Errorf("probe: %s", r)
			}
			return nil
		})
	}
	return w
}

// record is a fresh record of the owner with one note and one task, and
// the path that reads it back.
type record struct {
	ids  map[string]int64
	read []string
}

func (rec record) path(p string) string {
	for k, v := range rec.ids {
		p = strings.ReplaceAll(p, "{"+k+"}", fmt.Sprint(v))
	}
	return p
}

// fill replaces "{name}" values of a body with the record's ids.
func (rec record) fill(body any) any {
	m, ok := body.(map[string]any)
	if !ok {
		return body
	}
	out := map[string]any{}
	for k, v := range m {
		if s, ok := v.(string); ok && strings.HasPrefix(s, "{") {
			v = rec.ids[strings.Trim(s, "{}")]
		}
		out[k] = v
	}
	return out
}

// fresh creates a record of kind as the owner, assigned to the owner.
func (w *scopeWorld) fresh(t *testing.T, kind string) record {
	t.Helper()
	o := w.owner
	ids := map[string]int64{}
	var base string
	switch kind {
	case "contact":
		ids["id"] = must(t, http.StatusCreated)(o.Do("POST", "/contacts", map[string]any{
			"first_name": "Scoped", "last_name": uniq(""), "assigned_to": w.ownerID})).ID()
		base = "/contacts/{id}"
	case "company":
		ids["id"] = must(t, http.StatusCreated)(o.Do("POST", "/companies", map[string]any{"name": uniq("Scoped ")})).ID()
		return record{ids: ids, read: []string{"/companies/{id}"}}
	case "lead":
		ids["id"] = must(t, http.StatusCreated)(o.Do("POST", "/leads", map[string]any{
			"first_name": "Scoped", "last_name": uniq(""), "email": uniq("lead") + "@scope.test", "assigned_to": w.ownerID})).ID()
		base = "/leads/{id}"
	case "deal", "quote":
		ids["id"] = must(t, http.StatusCreated)(o.Do("POST", "/deals", map[string]any{
			"title": uniq("Scoped "), "value": "100.00", "assigned_to": w.ownerID})).ID()
		ids["quoteId"] = must(t, http.StatusCreated)(o.Do("POST", fmt.Sprintf("/deals/%d/quotes", ids["id"]), map[string]any{
			"line_items": []map[string]any{{"description": "Work", "quantity": "1", "unit_price": "100.00"}}})).ID()
		return record{ids: ids, read: []string{"/deals/{id}", "/deals/{id}/quotes", "/quotes/{quoteId}"}}
	case "contract":
		deal := must(t, http.StatusCreated)(o.Do("POST", "/deals", map[string]any{
			"title": uniq("Scoped "), "value": "100.00", "assigned_to": w.ownerID})).ID()
		ids["dealId"] = deal
		ids["id"] = must(t, http.StatusCreated)(o.Do("POST", "/contracts", map[string]any{
			"deal_id": deal, "template_id": w.templateID, "title": "Scoped"})).ID()
		base = "/contracts/{id}"
	default:
		t.Fatalf("unknown kind %s", kind)
	}
	ids["noteId"] = must(t, http.StatusCreated)(o.Do("POST", strings.ReplaceAll(base, "{id}", fmt.Sprint(ids["id"]))+"/notes",
		map[string]any{"content": "Owner's note"})).ID()
	ids["taskId"] = must(t, http.StatusCreated)(o.Do("POST", strings.ReplaceAll(base, "{id}", fmt.Sprint(ids["id"]))+"/tasks",
		map[string]any{"title": "Owner's task"})).ID()
	return record{ids: ids, read: []string{base, base + "/notes", base + "/tasks"}}
}

// snapshot reads every path of rec as the admin.
func (w *scopeWorld) snapshot(t *testing.T, rec record) []string {
	t.Helper()
	var out []string
	for _, p := range rec.read {
		out = append(out, string(must(t, http.StatusOK)(w.admin.Do("GET", rec.path(p), nil)).Body))
	}
	return out
}

// minimalPDF is a parseable one-page PDF, for the signed-copy upload: the
// contracts service refuses a file that does not parse as a PDF, so the
// cross-reference table carries the objects' real offsets.
var minimalPDF = func() string {
	objs := []string{
		"<</Type/Catalog/Pages 2 0 R>>",
		"<</Type/Pages/Kids[3 0 R]/Count 1>>",
		"<</Type/Page/Parent 2 0 R/MediaBox[0 0 612 792]/Resources<<>>>>",
	}
	var b strings.Builder
	b.WriteString("%PDF-1.4\n")
	offsets := make([]int, len(objs))
	for i, o := range objs {
		offsets[i] = b.Len()
		fmt.Fprintf(&b, "%d 0 obj\n%s\nendobj\n", i+1, o)
	}
	xref := b.Len()
	fmt.Fprintf(&b, "xref\n0 %d\n0000000000 65535 f \n", len(objs)+1)
	for _, off := range offsets {
		fmt.Fprintf(&b, "%010d 00000 n \n", off)
	}
	fmt.Fprintf(&b, "trailer\n<</Size %d/Root 1 0 R>>\nstartxref\n%d\n%%%%EOF\n", len(objs)+1, xref)
	return b.String()
}()

// TestWriteAccessFollowsEditScope walks every write route of a record
// with each kind of caller: the admin, the record's owner, a teammate
// (team scope), a user of another team (team scope) and a user of the
// owner's team limited to their own records. Refused calls answer 403
// forbidden and change nothing.
func TestWriteAccessFollowsEditScope(t *testing.T) {
	t.Parallel()
	w := newScopeWorld(t)
	// Each service learns the users from identity's events: wait until
	// every one refuses the own-scope user.
	for _, kind := range []string{"contact", "lead", "deal", "contract"} {
		rec := w.fresh(t, kind)
		eventually(t, kind+" knows the edit scopes", func() error {
			r, err := w.ownScope.Do("POST", rec.path(map[string]string{
				"contact": "/contacts/{id}/tasks", "lead": "/leads/{id}/tasks", "deal": "/deals/{id}/quotes", "contract": "/contracts/{id}/tasks",
			}[kind]), map[string]any{"contact": map[string]any{"title": "probe"}, "lead": map[string]any{"title": "probe"},
				"deal": map[string]any{"line_items": []any{}}, "contract": map[string]any{"title": "probe"}}[kind])
			return expectProblem(r, err, http.StatusForbidden, "forbidden")
		})
	}

	all := map[string]bool{"admin": true, "owner": true, "teammate": true, "other team": false, "own scope": false}
	unassigned := map[string]bool{"admin": true, "owner": true, "teammate": true, "other team": true, "own scope": false}
	type route struct {
		kind, method, path string
		body               any
		ok                 int
		allowed            map[string]bool
	}
	task := map[string]any{"title": "Changed task", "status": "completed"}
	routes := []route{
		{"contact", "PUT", "/contacts/{id}", map[string]any{"first_name": "Changed", "last_name": "Name"}, 200, all},
		{"contact", "DELETE", "/contacts/{id}", nil, 200, all},
		{"company", "PUT", "/companies/{id}", map[string]any{"name": uniq("Changed ")}, 200, unassigned},
		{"company", "DELETE", "/companies/{id}", nil, 200, unassigned},
		{"lead", "PUT", "/leads/{id}", map[string]any{"first_name": "Changed", "last_name": "Name", "assigned_to": nil}, 200, all},
		{"lead", "DELETE", "/leads/{id}", nil, 200, all},
		{"lead", "POST", "/leads/{id}/qualify", map[string]any{}, 200, all},
		{"lead", "PUT", "/leads/{id}/disqualify", map[string]any{"reason": "No budget"}, 200, all},
		{"deal", "PUT", "/deals/{id}", map[string]any{"title": "Won deal", "status": "won"}, 200, all},
		{"deal", "DELETE", "/deals/{id}", nil, 200, all},
		{"quote", "POST", "/deals/{id}/quotes", map[string]any{"line_items": []map[string]any{{"description": "More", "quantity": "2", "unit_price": "5.00"}}}, 201, all},
		{"quote", "PUT", "/quotes/{quoteId}", map[string]any{"status": "sent"}, 200, all},
		{"quote", "DELETE", "/quotes/{quoteId}", nil, 200, all},
		{"contract", "PUT", "/contracts/{id}", map[string]any{"title": "Changed", "deal_id": "{dealId}", "template_id": w.templateID}, 200, all},
		{"contract", "DELETE", "/contracts/{id}", nil, 200, all},
		{"contract", "PUT", "/contracts/{id}/regenerate", nil, 200, all},
		{"contract", "UPLOAD", "/contracts/{id}/executed", nil, 201, all},
	}
	for _, parent := range []struct{ kind, base string }{{"contact", "/contacts/{id}"}, {"lead", "/leads/{id}"}, {"contract", "/contracts/{id}"}} {
		routes = append(routes,
			route{parent.kind, "POST", parent.base + "/notes", map[string]any{"content": "Another note"}, 201, all},
			route{parent.kind, "DELETE", parent.base + "/notes/{noteId}", nil, 200, all},
			route{parent.kind, "POST", parent.base + "/tasks", map[string]any{"title": "Another task"}, 201, all},
			route{parent.kind, "PUT", parent.base + "/tasks/{taskId}", task, 200, all},
			route{parent.kind, "DELETE", parent.base + "/tasks/{taskId}", nil, 200, all},
		)
	}
	callers := []struct {
		name string
		c    *Client
	}{{"admin", w.admin}, {"owner", w.owner}, {"teammate", w.teammate}, {"other team", w.otherTeam}, {"own scope", w.ownScope}}
	sem := make(chan struct{}, 6) // a shared two-core machine
	for _, rt := range routes {
		for _, caller := range callers {
			t.Run(rt.method+" "+rt.path+" as "+caller.name, func(t *testing.T) {
				t.Parallel()
				sem <- struct{}{}
				defer func() { <-sem }()
				rec := w.fresh(t, rt.kind)
				var before []string
				if !rt.allowed[caller.name] {
					before = w.snapshot(t, rec)
				}
				var r *Response
				var err error
				if rt.method == "UPLOAD" {
					r, err = caller.c.Upload(rec.path(rt.path), "file", "signed.pdf", []byte(minimalPDF))
				} else {
					r, err = caller.c.Do(rt.method, rec.path(rt.path), rec.fill(rt.body))
				}
				if err != nil {
					t.Fatal(err)
				}
				if rt.allowed[caller.name] {
					if r.Status != rt.ok {
						t.Fatalf("status %s, want %d", r, rt.ok)
					}
					return
				}
				if err := expectProblem(r, nil, http.StatusForbidden, "forbidden"); err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(before, w.snapshot(t, rec)); diff != "" {
					t.Errorf("a refused write changed the record (-before +after):\n%s", diff)
				}
			})
		}
	}
}

// TestNoteAuthorMayDeleteTheirNote: a note's author may delete it even
// after the record left their edit scope.
func TestNoteAuthorMayDeleteTheirNote(t *testing.T) {
	t.Parallel()
	w := newScopeWorld(t)
	me := must(t, http.StatusOK)(w.ownScope.Do("GET", "/auth/me", nil)).ID()
	c := must(t, http.StatusCreated)(w.admin.Do("POST", "/contacts", map[string]any{
		"first_name": "Shared", "last_name": uniq(""), "assigned_to": me})).ID()
	note := must(t, http.StatusCreated)(w.ownScope.Do("POST", fmt.Sprintf("/contacts/%d/notes", c), map[string]any{"content": "Mine"})).ID()
	// Assigned to the owner now: outside the own-scope user's reach...
	must(t, http.StatusOK)(w.admin.Do("PUT", fmt.Sprintf("/contacts/%d", c), map[string]any{
		"first_name": "Shared", "last_name": "Contact", "assigned_to": w.ownerID}))
	eventually(t, "contacts knows the edit scopes", func() error {
		r, err := w.ownScope.Do("POST", fmt.Sprintf("/contacts/%d/notes", c), map[string]any{"content": "Another"})
		return expectProblem(r, err, http.StatusForbidden, "forbidden")
	})
	// ...but their own note is still theirs to delete.
	must(t, http.StatusOK)(w.ownScope.Do("DELETE", fmt.Sprintf("/contacts/%d/notes/%d", c, note), nil))
}
