package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// apiOp is one operation of the served OpenAPI document.
type apiOp struct {
	Method, Path string
	// Auth is "public", "jwt", "admin" or "key", from the operation's
	// security requirement and its x-admin mark.
	Auth string
	// Body is "json", "multipart" or "" (no request body).
	Body string
	// Schema names the JSON request body's component schema.
	Schema string
	// Success is the documented 2xx status.
	Success int
}

func (o apiOp) String() string { return o.Method + " " + o.Path }

// openAPIDoc is the part of /openapi.json the security table reads.
type openAPIDoc struct {
	ops      []apiOp
	readOnly map[string]map[string]string // schema → read-only property → type
}

// loadOpenAPI reads every operation of the gateway's published document.
func loadOpenAPI(t *testing.T) openAPIDoc {
	t.Helper()
	resp, err := http.Get(stack.URLs["gateway"] + "/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	type schema struct {
		Ref        string `json:"$ref"`
		Properties map[string]struct {
			Type     any  `json:"type"`
			ReadOnly bool `json:"readOnly"`
		} `json:"properties"`
	}
	var raw struct {
		Paths map[string]map[string]struct {
			Security    []map[string]any `json:"security"`
			Admin       bool             `json:"x-admin"`
			RequestBody *struct {
				Content map[string]struct {
					Schema schema `json:"schema"`
				} `json:"content"`
			} `json:"requestBody"`
			Responses map[string]any `json:"responses"`
		} `json:"paths"`
		Components struct {
			Schemas map[string]schema `json:"schemas"`
		} `json:"components"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&raw); err != nil {
		t.Fatal(err)
	}
	doc := openAPIDoc{readOnly: map[string]map[string]string{}}
	for name, s := range raw.Components.Schemas {
		for p, prop := range s.Properties {
			if prop.ReadOnly {
				if doc.readOnly[name] == nil {
					doc.readOnly[name] = map[string]string{}
				}
				doc.readOnly[name][p] = fmt.Sprint(prop.Type)
			}
		}
	}
	for path, methods := range raw.Paths {
		for method, o := range methods {
			op := apiOp{Method: strings.ToUpper(method), Path: path, Auth: "public"}
			for _, req := range o.Security {
				switch {
				case req["bearerAuth"] != nil && o.Admin:
					op.Auth = "admin"
				case req["bearerAuth"] != nil:
					op.Auth = "jwt"
				case req["apiKey"] != nil:
					op.Auth = "key"
				}
			}
			if o.RequestBody != nil {
				if c, ok := o.RequestBody.Content["application/json"]; ok {
					op.Body, op.Schema = "json", strings.TrimPrefix(c.Schema.Ref, "#/components/schemas/")
				} else if _, ok := o.RequestBody.Content["multipart/form-data"]; ok {
					op.Body = "multipart"
				}
			}
			for code := range o.Responses {
				var n int
				if _, err := fmt.Sscan(code, &n); err == nil && n >= 200 && n < 300 && op.Success != 201 &&
					(op.Success == 0 || n == 201 || n < op.Success) {
					// A create that may also answer 200 (a replay) or 202
					// (queued while a service is down) answers 201 here.
					op.Success = n
				}
			}
			doc.ops = append(doc.ops, op)
		}
	}
	sort.Slice(doc.ops, func(i, j int) bool { return doc.ops[i].String() < doc.ops[j].String() })
	return doc
}

// securityWorld holds a record of every kind the API serves, made by the
// admin, and the credentials the table tries.
type securityWorld struct {
	admin, other *Client
	apiKey       string
	ids          map[string]int64 // path prefix or path parameter → id
	reads        []string         // every record, read back by the admin
	// fields are a unique custom field of each object (its {name}, and
	// the id_property of its batch upsert).
	fields map[string]string
}

func newSecurityWorld(t *testing.T) *securityWorld {
	t.Helper()
	adm := admin(t)
	created := func(path string, body any) int64 {
		t.Helper()
		return must(t, http.StatusCreated)(adm.Do("POST", path, body)).ID()
	}
	w := &securityWorld{admin: adm, ids: map[string]int64{}, fields: map[string]string{}}
	for _, object := range []string{"contacts", "companies", "leads", "deals"} {
		w.fields[object] = uniq("sec_")
		must(t, http.StatusCreated)(adm.Do("POST", "/properties/"+object, map[string]any{
			"name": w.fields[object], "label": "Security " + w.fields[object], "type": "text", "unique": true}))
		w.reads = append(w.reads, "/properties/"+object+"/"+w.fields[object])
	}
	w.ids["/teams"] = created("/teams", map[string]any{"name": uniq("Security ")})
	w.ids["/users"] = created("/users", map[string]any{"name": "Target", "email": uniq("target") + "@sec.test",
		"password": "correct horse battery", "team_id": w.ids["/teams"]})
	otherEmail := uniq("other") + "@sec.test"
	created("/users", map[string]any{"name": "Other", "email": otherEmail, "password": "correct horse battery", "edit_scope": "own"})
	tok, err := stack.Client().Login(otherEmail, "correct horse battery")
	if err != nil {
		t.Fatal(err)
	}
	w.other = stack.Client().With(tok)
	key := must(t, http.StatusCreated)(adm.Do("POST", "/api-keys", map[string]any{"name": uniq("sec"), "rate_limit_per_minute": 10000}))
	w.ids["/api-keys"], w.apiKey = key.ID(), fmt.Sprint(key.Data()["key"])
	w.ids["/access-tokens"] = created("/access-tokens", map[string]any{"name": uniq("sec"), "scopes": []string{"contacts:read"}})
	w.ids["/deal-stages"] = created("/deal-stages", map[string]any{"name": uniq("Stage ")})
	w.ids["/contacts"] = created("/contacts", map[string]any{"first_name": "Sec", "last_name": "Contact"})
	w.ids["/companies"] = created("/companies", map[string]any{"name": uniq("Sec ")})
	w.ids["/leads"] = created("/leads", map[string]any{"first_name": "Sec", "last_name": "Lead", "email": uniq("lead") + "@sec.test"})
	w.ids["/deals"] = created("/deals", map[string]any{"title": uniq("Sec "), "value": "10.00"})
	w.ids["/quotes"] = created(fmt.Sprintf("/deals/%d/quotes", w.ids["/deals"]), map[string]any{
		"line_items": []map[string]any{{"description": "Work", "quantity": "1", "unit_price": "10.00"}}})
	w.ids["/contract-templates"] = created("/contract-templates", map[string]any{"name": uniq("Sec "), "content": "<p>{{deal.title}}</p>"})
	w.ids["/contracts"] = created("/contracts", map[string]any{"deal_id": w.ids["/deals"], "template_id": w.ids["/contract-templates"], "title": "Sec"})
	w.ids["/mailboxes"] = created("/mailboxes", map[string]any{"host": "imap.example.com", "username": "sec", "password": "mailbox-password"})
	w.ids["/emails"] = created("/emails", map[string]any{"message_id": "<" + uniq("sec") + "@sec.test>", "subject": "Security",
		"from": "someone@sec.test", "to": []string{"sales@sec.test"}})
	// A subscription whose receiver is never there (port 9), and the
	// delivery its ping leaves in the log.
	w.ids["/webhooks"] = created("/webhooks", map[string]any{"url": "http://" + receiverHost + ":9/security", "events": []string{"contract.executed"}})
	w.ids["/webhooks/deliveryId"] = must(t, http.StatusOK)(adm.Do("POST", fmt.Sprintf("/webhooks/%d/test", w.ids["/webhooks"]), nil)).ID()
	// A privacy request's {id} routes are refused before any lookup; the
	// mass-assignment pass erases addresses held nowhere.
	w.ids["/privacy"] = 1
	// A merge of two contacts of its own, for GET /merges/{id}.
	survivor := created("/contacts", map[string]any{"first_name": "Merge", "last_name": "Survivor"})
	mergedID := created("/contacts", map[string]any{"first_name": "Merge", "last_name": "Merged"})
	w.ids["/merges"] = must(t, http.StatusOK)(adm.Do("POST", fmt.Sprintf("/contacts/%d/merge", survivor),
		map[string]any{"merge_ids": []int64{mergedID}})).ID()
	must(t, http.StatusCreated)(stack.Client().withKey(w.apiKey).Do("POST", "/public/leads", map[string]any{
		"first_name": "Public", "last_name": "Lead", "email": uniq("public") + "@sec.test"}))
	subs := must(t, http.StatusOK)(adm.Do("GET", "/intake/submissions", nil))
	if list, _ := subs.JSON["data"].([]any); len(list) > 0 {
		first, _ := list[0].(map[string]any)
		f, _ := first["id"].(float64)
		w.ids["/intake/submissions"] = int64(f)
	}
	for object, body := range map[string]map[string]any{
		"contacts": {"first_name": "Batch", "last_name": "Target"}, "companies": {"name": uniq("Batch ")},
		"leads": {"first_name": "Batch", "last_name": "Target"}, "deals": {"title": uniq("Batch ")},
	} {
		for _, op := range []string{"update", "delete"} {
			w.ids["/"+object+"/batch/"+op] = created("/"+object, body)
		}
	}
	for _, parent := range []string{"/contacts", "/leads", "/contracts"} {
		base := fmt.Sprintf("%s/%d", parent, w.ids[parent])
		w.ids[parent+"/noteId"] = created(base+"/notes", map[string]any{"content": "Admin's note"})
		w.ids[parent+"/taskId"] = created(base+"/tasks", map[string]any{"title": "Admin's task"})
		w.reads = append(w.reads, base+"/notes", base+"/tasks")
	}
	for _, p := range []string{"/teams", "/users", "/deal-stages", "/contacts", "/companies", "/leads", "/deals", "/quotes",
		"/contract-templates", "/contracts", "/mailboxes", "/emails", "/webhooks"} {
		w.reads = append(w.reads, fmt.Sprintf("%s/%d", p, w.ids[p]))
	}
	// Records only: lists change under the other tests sharing the stack.
	// A refused create is caught by its exact status (it would be 201).
	w.reads = append(w.reads, fmt.Sprintf("/deals/%d/quotes", w.ids["/deals"]))
	return w
}

// withKey returns a copy sending X-API-Key.
func (c *Client) withKey(key string) *Client {
	cp := c.With(c.Token)
	cp.Header.Set("X-API-Key", key)
	return cp
}

// path fills an operation's path parameters with the world's ids.
func (w *securityWorld) path(t *testing.T, op apiOp) string {
	t.Helper()
	segs := strings.Split(op.Path, "/")
	prefix := "/" + segs[1]
	if prefix == "/intake" {
		prefix = "/intake/submissions"
	}
	out := op.Path
	if prefix == "/properties" {
		out = strings.ReplaceAll(out, "{name}", w.fields[segs[2]])
	}
	for _, param := range []string{"noteId", "taskId"} {
		out = strings.ReplaceAll(out, "{"+param+"}", fmt.Sprint(w.ids[prefix+"/"+param]))
	}
	if strings.Contains(out, "{id}") {
		id, ok := w.ids[prefix]
		if !ok {
			t.Fatalf("%s: no record for %s", op, prefix)
		}
		out = strings.ReplaceAll(out, "{id}", fmt.Sprint(id))
	}
	return out
}

// call sends op with a body of the right kind (so the gateway's
// content-type check passes and authentication decides).
func call(c *Client, op apiOp, path string, body map[string]any) (*Response, error) {
	switch op.Body {
	case "multipart":
		return c.Upload(path, "file", "file.pdf", []byte(minimalPDF))
	case "json":
		if body == nil {
			body = map[string]any{}
		}
		return c.Do(op.Method, path, body)
	}
	return c.Do(op.Method, path, nil)
}

// snapshot reads every record of the world as the admin.
func (w *securityWorld) snapshot(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, p := range w.reads {
		r := must(t, http.StatusOK)(w.admin.Do("GET", p, nil))
		out[p] = string(r.Body)
		if strings.HasPrefix(p, "/mailboxes/") {
			// The first sync runs in the background and records its
			// outcome: what a caller sets is compared, not the sync state.
			d := r.Data()
			for _, k := range []string{"status", "last_error", "last_synced_at", "uidvalidity", "last_uid", "updated_at"} {
				delete(d, k)
			}
			out[p] = fmt.Sprint(d)
		}
	}
	return out
}

// expiredToken logs in through a second identity process that shares the
// stack's database and signing keys but issues one-minute tokens, and
// returns the token and when the gateway stops accepting it (expiry plus
// the verifiers' leeway).
func expiredToken(t *testing.T) (string, time.Time) {
	t.Helper()
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	env := []string{"CRM_ACCESS_TTL=1m"}
	for _, kv := range stack.env["identity"] {
		if !strings.HasPrefix(kv, "ADDR=") && !strings.HasPrefix(kv, "CRM_ACCESS_TTL=") {
			env = append(env, kv)
		}
	}
	env = append(env, fmt.Sprintf("ADDR=127.0.0.1:%d", port))
	cmd := exec.Command(filepath.Join(stack.binDir, "identity"))
	cmd.Env = env
	var logs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	cmd.SysProcAttr = procAttr()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
	})
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	var tok string
	eventually(t, "short-lived identity logs in", func() error {
		var err error
		tok, err = NewClient(base).Login(AdminEmail, AdminPassword)
		return err
	})
	return tok, time.Now().Add(time.Minute + 31*time.Second)
}

// TestSecurityTable walks every operation of the published OpenAPI
// document with credentials that must be refused — none, an expired token,
// a user token on admin routes, an API key on JWT routes and another
// (own-scope) user's token on record writes — asserting the exact status
// and code and that no record changed; then sends every JSON body with
// every read-only field of its schema and asserts they are ignored.
func TestSecurityTable(t *testing.T) {
	t.Parallel()
	expired, usableUntil := expiredToken(t)
	doc := loadOpenAPI(t)
	w := newSecurityWorld(t)
	// The own-scope user must be known to every service before its writes
	// are judged by scope.
	eventually(t, "services know the own-scope user", func() error {
		for _, p := range []string{"/contacts", "/leads", "/contracts", "/quotes"} {
			path := fmt.Sprintf("%s/%d/tasks/%d", p, w.ids[p], w.ids[p+"/taskId"])
			if p == "/quotes" {
				path = fmt.Sprintf("/quotes/%d", w.ids["/quotes"])
			}
			r, err := w.other.Do("DELETE", path, nil)
			if err := expectProblem(r, err, http.StatusForbidden, "forbidden"); err != nil {
				return fmt.Errorf("%s: %w", p, err)
			}
		}
		return nil
	})
	if len(doc.ops) < 100 {
		t.Fatalf("only %d operations in /openapi.json", len(doc.ops))
	}
	before := w.snapshot(t)

	type attempt struct {
		name   string
		client *Client
		status int
		code   string
	}
	anonymous := stack.Client()
	keyOnly := stack.Client().withKey(w.apiKey)
	keyAsBearer := stack.Client().With(w.apiKey)
	jwtOnKey := stack.Client().With(w.other.Token).withKey(w.apiKey)
	attempts := func(op apiOp) []attempt {
		var out []attempt
		switch op.Auth {
		case "jwt", "admin":
			out = append(out,
				attempt{"no credentials", anonymous, 401, "unauthenticated"},
				attempt{"API key in X-API-Key", keyOnly, 401, "unauthenticated"},
				attempt{"API key as bearer", keyAsBearer, 401, "unauthenticated"})
		case "key":
			out = append(out,
				attempt{"no credentials", anonymous, 401, "unauthenticated"},
				attempt{"bearer token beside the key", jwtOnKey, 401, "unauthenticated"})
		}
		if op.Auth == "admin" {
			out = append(out, attempt{"user token", w.other, 403, "forbidden"})
		}
		if op.Auth == "jwt" && op.Method != "GET" && strings.Contains(op.Path, "{") {
			switch {
			case strings.HasPrefix(op.Path, "/mailboxes/"):
				// A mailbox is its owner's: others do not see it at all.
				out = append(out, attempt{"another user's token", w.other, 404, "not_found"})
			default:
				out = append(out, attempt{"another user's token", w.other, 403, "forbidden"})
			}
		}
		return out
	}
	cases := 0
	t.Run("refused", func(t *testing.T) {
		for _, op := range doc.ops {
			for _, a := range attempts(op) {
				cases++
				t.Run(op.String()+" with "+a.name, func(t *testing.T) {
					body, _ := w.createBody(op) // valid: only the credential is wrong
					r, err := call(a.client, op, w.path(t, op), body)
					if err := expectProblem(r, err, a.status, a.code); err != nil {
						t.Fatal(err)
					}
					if a.status == 401 && r.Header.Get("WWW-Authenticate") == "" {
						t.Errorf("401 without WWW-Authenticate")
					}
				})
			}
		}
	})
	t.Run("expired token", func(t *testing.T) {
		time.Sleep(time.Until(usableUntil))
		c := stack.Client().With(expired)
		for _, op := range doc.ops {
			if op.Auth != "jwt" && op.Auth != "admin" {
				continue
			}
			cases++
			t.Run(op.String(), func(t *testing.T) {
				r, err := call(c, op, w.path(t, op), nil)
				if err := expectProblem(r, err, 401, "unauthenticated"); err != nil {
					t.Fatal(err)
				}
			})
		}
	})
	if diff := cmp.Diff(before, w.snapshot(t)); diff != "" {
		t.Errorf("refused calls changed records (-before +after):\n%s", diff)
	}
	t.Logf("%d refused calls over %d operations", cases, len(doc.ops))

	t.Run("mass assignment", func(t *testing.T) { w.massAssignment(t, doc) })
}
