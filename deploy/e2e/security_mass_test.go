package e2e

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// Bogus values of read-only fields: an id and a timestamp no record has.
const (
	bogusID   = 987654321
	bogusTime = "1999-01-01T00:00:00.000000Z"
)

// createBody is a valid body for each JSON operation that has no record
// to read back (creates and actions), keyed by "METHOD path".
func (w *securityWorld) createBody(op apiOp) (map[string]any, bool) {
	notes := map[string]any{"content": "Mass-assigned note"}
	tasks := map[string]any{"title": "Mass-assigned task"}
	bodies := map[string]map[string]any{
		"POST /users":                {"name": "Mass", "email": uniq("mass") + "@sec.test", "password": "correct horse battery"},
		"POST /teams":                {"name": uniq("Mass ")},
		"POST /api-keys":             {"name": uniq("mass")},
		"POST /access-tokens":        {"name": uniq("mass"), "scopes": []string{"contacts:read"}},
		"POST /contacts":             {"first_name": "Mass", "last_name": "Assigned"},
		"POST /companies":            {"name": uniq("Mass ")},
		"POST /leads":                {"first_name": "Mass", "last_name": "Assigned", "email": uniq("mass") + "@sec.test"},
		"POST /deals":                {"title": uniq("Mass ")},
		"POST /deal-stages":          {"name": uniq("Mass ")},
		"POST /deals/{id}/quotes":    {"line_items": []map[string]any{{"description": "Mass", "quantity": "1", "unit_price": "1.00"}}},
		"POST /contracts":            {"deal_id": w.ids["/deals"], "template_id": w.ids["/contract-templates"], "title": "Mass"},
		"POST /contract-templates":   {"name": uniq("Mass "), "content": "<p>Mass</p>"},
		"POST /public/leads":         {"first_name": "Mass", "last_name": "Assigned", "email": uniq("mass") + "@sec.test"},
		"POST /emails":               {"message_id": "<" + uniq("mass") + "@sec.test>", "subject": "Mass", "from": "m@sec.test", "to": []string{"sales@sec.test"}},
		"POST /mailboxes":            {"host": "imap.example.com", "username": uniq("mass"), "password": "mailbox-password"},
		"POST /webhooks":             {"url": "http://" + receiverHost + ":9/mass", "events": []string{"contract.executed"}},
		"PUT /leads/{id}/disqualify": {"reason": "Mass assignment"},
		"POST /privacy/exports":      {"email": uniq("mass") + "@sec.test"},
		"POST /privacy/erasures":     {"email": uniq("mass") + "@sec.test", "reason": "Mass assignment"},
		"POST /leads/{id}/qualify":   {},
		"POST /contacts/{id}/notes":  notes, "POST /leads/{id}/notes": notes, "POST /contracts/{id}/notes": notes,
		"POST /contacts/{id}/tasks": tasks, "POST /leads/{id}/tasks": tasks, "POST /contracts/{id}/tasks": tasks,
	}
	for object, input := range map[string]func() map[string]any{
		"contacts": func() map[string]any {
			return map[string]any{"first_name": "Mass", "last_name": "Batch", "email": uniq("mass") + "@sec.test"}
		},
		"companies": func() map[string]any { return map[string]any{"name": uniq("Mass "), "domain": uniq("mass") + ".test"} },
		"leads": func() map[string]any {
			return map[string]any{"first_name": "Mass", "last_name": "Batch", "email": uniq("mass") + "@sec.test"}
		},
		"deals": func() map[string]any { return map[string]any{"title": uniq("Mass ")} },
	} {
		base := "POST /" + object + "/batch/"
		update := input()
		update["id"] = w.ids["/"+object+"/batch/update"]
		keyed := input()
		keyed["custom_fields"] = map[string]any{w.fields[object]: uniq("ext-")}
		bodies["POST /properties/"+object] = map[string]any{"name": uniq("mass_"), "label": "Mass", "type": "text"}
		bodies[base+"create"] = map[string]any{"inputs": []any{input()}}
		bodies[base+"read"] = map[string]any{"ids": []int64{w.ids["/"+object]}}
		// Records of their own, so the shared ones stay as the other
		// checks read them.
		bodies[base+"update"] = map[string]any{"inputs": []any{update}}
		bodies[base+"delete"] = map[string]any{"ids": []int64{w.ids["/"+object+"/batch/delete"]}}
		bodies[base+"upsert"] = map[string]any{"id_property": w.fields[object], "inputs": []any{keyed}}
	}
	b, ok := bodies[op.String()]
	return b, ok
}

// massAssignment sends every authenticated JSON body with every read-only
// field of its schema set to a bogus value: the call answers its
// documented success, no bogus value comes back, and an update keeps the
// record's read-only values.
func (w *securityWorld) massAssignment(t *testing.T, doc openAPIDoc) {
	gets := map[string]bool{}
	for _, op := range doc.ops {
		if op.Method == "GET" {
			gets[op.Path] = true
		}
	}
	checked := 0
	for _, op := range doc.ops {
		if op.Body != "json" || op.Auth == "public" {
			continue
		}
		// What the document marks read-only, and what every record has
		// read-only whether or not its schema says so.
		ro := map[string]string{"id": "integer", "created_by": "integer", "created_at": "string", "updated_at": "string"}
		for f, typ := range doc.readOnly[op.Schema] {
			ro[f] = typ
		}
		checked++
		t.Run(op.String(), func(t *testing.T) {
			path := w.path(t, op)
			if op.String() == "POST /leads/{id}/qualify" {
				// A lead of its own: qualifying ends what the other
				// operations may do with the shared one.
				path = fmt.Sprintf("/leads/%d/qualify", must(t, http.StatusCreated)(w.admin.Do("POST", "/leads", map[string]any{
					"first_name": "Qualified", "last_name": "Mass", "email": uniq("q") + "@sec.test"})).ID())
			}
			var pair []int64
			for _, object := range []string{"contacts", "companies"} {
				if op.String() != "POST /"+object+"/{id}/merge" && op.String() != "POST /"+object+"/duplicates/dismiss" {
					continue
				}
				// Two records of their own: a merge ends one of them.
				body := map[string]any{"first_name": "Mass", "last_name": "Pair"}
				if object == "companies" {
					body = map[string]any{"name": uniq("Mass pair ")}
				}
				for range 2 {
					pair = append(pair, must(t, http.StatusCreated)(w.admin.Do("POST", "/"+object, body)).ID())
				}
				if strings.HasSuffix(op.Path, "/merge") {
					path = fmt.Sprintf("/%s/%d/merge", object, pair[0])
				}
			}
			for _, child := range []struct {
				param, coll string
				body        map[string]any
			}{{"{taskId}", "tasks", map[string]any{"title": "Mass target"}}, {"{noteId}", "notes", map[string]any{"content": "Mass target"}}} {
				if i := strings.Index(op.Path, "/"+child.coll+"/"+child.param); i >= 0 {
					// A note or task of its own, so no other operation of
					// the table has touched it.
					parent := w.path(t, apiOp{Method: "GET", Path: op.Path[:i]})
					id := must(t, http.StatusCreated)(w.admin.Do("POST", parent+"/"+child.coll, child.body)).ID()
					path = parent + "/" + child.coll + "/" + fmt.Sprint(id)
				}
			}
			c := w.admin
			if op.Auth == "key" {
				c = stack.Client().withKey(w.apiKey)
			}
			var body, before map[string]any
			if op.Method == "PUT" && gets[op.Path] {
				before = must(t, http.StatusOK)(w.admin.Do("GET", path, nil)).Data()
				body = map[string]any{}
				for k, v := range before {
					body[k] = v
				}
			} else {
				b, ok := w.createBody(op)
				switch {
				case strings.HasSuffix(op.Path, "/merge"):
					b, ok = map[string]any{"merge_ids": pair[1:]}, true
				case strings.HasSuffix(op.Path, "/duplicates/dismiss"):
					b, ok = map[string]any{"ids": pair}, true
				}
				if !ok {
					t.Fatalf("no valid body known for %s: add one", op)
				}
				body = b
			}
			for field, typ := range ro {
				if strings.Contains(typ, "integer") {
					body[field] = bogusID
				} else {
					body[field] = bogusTime
				}
			}
			// The body breaks the document on purpose (read-only fields are
			// not part of a request schema), so this one exchange is not
			// held to it; what the service does with it is asserted below.
			unchecked := *c
			unchecked.Record = nil
			r, err := unchecked.Do(op.Method, path, body)
			if err != nil {
				t.Fatal(err)
			}
			if r.Status != op.Success {
				t.Fatalf("status %s, want %d", r, op.Success)
			}
			if s := string(r.Body); strings.Contains(s, fmt.Sprint(bogusID)) || strings.Contains(s, bogusTime) {
				t.Errorf("a read-only value was taken: %s", r.Body)
			}
			if before == nil {
				return
			}
			after := must(t, http.StatusOK)(w.admin.Do("GET", path, nil)).Data()
			for field := range ro {
				if field != "updated_at" && fmt.Sprint(after[field]) != fmt.Sprint(before[field]) {
					t.Errorf("read-only %s changed: %v → %v", field, before[field], after[field])
				}
			}
		})
	}
	if checked < 20 {
		t.Errorf("only %d operations with read-only fields checked", checked)
	}
}
