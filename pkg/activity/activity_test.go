package activity_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/opencrm/crm/pkg/activity"
	"github.com/opencrm/crm/pkg/authtest"
	"github.com/opencrm/crm/pkg/contract/contactsapi"
	"github.com/opencrm/crm/pkg/contract/route"
	"github.com/opencrm/crm/pkg/db"
	"github.com/opencrm/crm/pkg/history"
	"github.com/opencrm/crm/pkg/httpx"
	"github.com/opencrm/crm/pkg/problem"
	"github.com/opencrm/crm/pkg/testdb"
)

type fixture struct {
	srv   *httptest.Server
	db    *db.DB
	token string
}

func setup(t *testing.T) fixture {
	t.Helper()
	// The notes and tasks track themselves in the record history.
	migrate := func(ctx context.Context, d *db.DB) error {
		if err := history.Migrate(ctx, d); err != nil {
			return err
		}
		return activity.Migrate(ctx, d)
	}
	d := testdb.New(t, "activitytest", migrate, history.Migrations, activity.Migrations)
	iss := authtest.New(t)
	h, err := activity.New(activity.Config{
		DB: d, ParentType: activity.Contact,
		ParentExists: func(ctx context.Context, id int64) error {
			if id == 1 || id == 2 {
				return nil
			}
			return problem.NotFound("contact")
		},
		UserExists: func(ctx context.Context, id int64) (bool, error) { return id == 9, nil },
		References: activity.References{
			Contact: func(ctx context.Context, id int64) (bool, error) { return id <= 2, nil },
			Company: func(ctx context.Context, id int64) (bool, error) { return id == 3, nil },
			Deal: func(ctx context.Context, id int64) (bool, error) {
				if id == 99 {
					return false, problem.Unavailable("deals is unavailable", 5)
				}
				return id == 4, nil
			},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	h.Mount(mux, contactsapi.ContactActivity, httpx.Guards{route.JWT: iss.Verifier(t).Require})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return fixture{srv: srv, db: d, token: iss.User(t, 9)}
}

func (f fixture) do(t *testing.T, method, path, body string) (int, map[string]any) {
	t.Helper()
	st, _, out := f.doHeader(t, method, path, body)
	return st, out
}

func (f fixture) doHeader(t *testing.T, method, path, body string) (int, http.Header, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(method, f.srv.URL+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+f.token)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, resp.Header, out
}

// TestCreatedAnswers checks that a 201 carries the declaration's message
// and the Location of the new record, built from its declared route.
func TestCreatedAnswers(t *testing.T) {
	t.Parallel()
	f := setup(t)
	tests := []struct {
		name, path, body, location, message string
	}{
		{"note", "/contacts/1/notes", `{"content":"call back"}`, "/api/contacts/1/notes/", "Note added"},
		{"task", "/contacts/1/tasks", `{"title":"Send the proposal"}`, "/api/contacts/1/tasks/", "Task created"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			st, h, body := f.doHeader(t, "POST", tc.path, tc.body)
			if st != http.StatusCreated {
				t.Fatalf("status %d %v", st, body)
			}
			id := strconv.Itoa(int(body["data"].(map[string]any)["id"].(float64)))
			got := []string{h.Get("Location"), body["message"].(string)}
			if diff := cmp.Diff([]string{tc.location + id, tc.message}, got); diff != "" {
				t.Errorf("Location and message (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNotes(t *testing.T) {
	t.Parallel()
	f := setup(t)
	st, body := f.do(t, "POST", "/contacts/1/notes", `{"content":"first call"}`)
	if st != 201 {
		t.Fatalf("create: %d %v", st, body)
	}
	note := body["data"].(map[string]any)
	if note["content"] != "first call" || note["created_by"] != float64(9) {
		t.Errorf("note = %v", note)
	}
	f.do(t, "POST", "/contacts/1/notes", `{"content":"second"}`)
	_, list := f.do(t, "GET", "/contacts/1/notes", "")
	var contents []string
	for _, n := range list["data"].([]any) {
		contents = append(contents, n.(map[string]any)["content"].(string))
	}
	if diff := cmp.Diff([]string{"second", "first call"}, contents); diff != "" {
		t.Errorf("newest first (-want +got):\n%s", diff)
	}
	id := int(note["id"].(float64))
	tests := []struct {
		name, method, path, body string
		status                   int
		code                     string
	}{
		{"empty content", "POST", "/contacts/1/notes", `{"content":"  "}`, 422, "validation_failed"},
		{"missing content", "POST", "/contacts/1/notes", `{}`, 422, "validation_failed"},
		{"too long", "POST", "/contacts/1/notes", `{"content":"` + strings.Repeat("a", 100_001) + `"}`, 422, "validation_failed"},
		{"unknown parent", "POST", "/contacts/3/notes", `{"content":"x"}`, 404, "not_found"},
		{"note of another contact", "DELETE", "/contacts/2/notes/" + strconv.Itoa(id), "", 404, "not_found"},
		{"bad note id", "DELETE", "/contacts/1/notes/abc", "", 404, "not_found"},
		{"delete", "DELETE", "/contacts/1/notes/" + strconv.Itoa(id), "", 200, ""},
		{"delete again", "DELETE", "/contacts/1/notes/" + strconv.Itoa(id), "", 404, "not_found"},
	}
	for _, tt := range tests {
		st, body := f.do(t, tt.method, tt.path, tt.body)
		if st != tt.status || (tt.code != "" && body["code"] != tt.code) {
			t.Errorf("%s: %d %v, want %d %s", tt.name, st, body, tt.status, tt.code)
		}
	}
}

func TestTasks(t *testing.T) {
	t.Parallel()
	f := setup(t)
	st, body := f.do(t, "POST", "/contacts/1/tasks",
		`{"title":"Call back","due_date":"2026-12-01","due_time":"14:30","priority":"high","assigned_to":9,"deal_id":4}`)
	if st != 201 {
		t.Fatalf("create: %d %v", st, body)
	}
	task := body["data"].(map[string]any)
	id := strconv.Itoa(int(task["id"].(float64)))
	want := map[string]any{"title": "Call back", "due_date": "2026-12-01", "due_time": "14:30", "priority": "high",
		"status": "open", "contact_id": float64(1), "deal_id": float64(4), "assigned_to": float64(9)}
	for k, v := range want {
		if task[k] != v {
			t.Errorf("%s = %v, want %v", k, task[k], v)
		}
	}
	// PUT keeps absent fields, clears null ones, and completes the task.
	st, body = f.do(t, "PUT", "/contacts/1/tasks/"+id, `{"title":"Call back","status":"completed","deal_id":null}`)
	if st != 200 {
		t.Fatalf("update: %d %v", st, body)
	}
	task = body["data"].(map[string]any)
	if task["status"] != "completed" || task["completed_at"] == nil || task["deal_id"] != nil || task["priority"] != "high" {
		t.Errorf("updated = %v", task)
	}
	tests := []struct {
		name, method, path, body string
		status                   int
		field                    string
	}{
		{"no title", "POST", "/contacts/1/tasks", `{"priority":"low"}`, 422, "title"},
		{"bad priority", "POST", "/contacts/1/tasks", `{"title":"x","priority":"urgent"}`, 422, "priority"},
		{"bad date", "POST", "/contacts/1/tasks", `{"title":"x","due_date":"tomorrow"}`, 422, "due_date"},
		{"bad time", "POST", "/contacts/1/tasks", `{"title":"x","due_time":"25:99"}`, 422, "due_time"},
		{"unknown user", "POST", "/contacts/1/tasks", `{"title":"x","assigned_to":8}`, 422, "assigned_to"},
		{"wrong type", "POST", "/contacts/1/tasks", `{"title":"x","assigned_to":"nine"}`, 422, "assigned_to"},
		{"unknown deal", "POST", "/contacts/1/tasks", `{"title":"x","deal_id":5}`, 422, "deal_id"},
		{"unknown company", "POST", "/contacts/1/tasks", `{"title":"x","company_id":4,"deal_id":4}`, 422, "company_id"},
		{"unknown deal on update", "PUT", "/contacts/1/tasks/" + id, `{"title":"x","deal_id":5}`, 422, "deal_id"},
		{"deals unavailable", "POST", "/contacts/1/tasks", `{"title":"x","deal_id":99}`, 503, ""},
		{"put without title", "PUT", "/contacts/1/tasks/" + id, `{"status":"open"}`, 422, "title"},
		{"task of another contact", "PUT", "/contacts/2/tasks/" + id, `{"title":"x"}`, 404, ""},
		{"delete of another contact", "DELETE", "/contacts/2/tasks/" + id, "", 404, ""},
		{"delete", "DELETE", "/contacts/1/tasks/" + id, "", 200, ""},
	}
	for _, tt := range tests {
		st, body := f.do(t, tt.method, tt.path, tt.body)
		if st != tt.status {
			t.Errorf("%s: %d %v, want %d", tt.name, st, body, tt.status)
			continue
		}
		if tt.field != "" {
			errs, _ := body["errors"].([]any)
			if len(errs) != 1 || errs[0].(map[string]any)["field"] != tt.field {
				t.Errorf("%s: errors %v, want field %s", tt.name, body["errors"], tt.field)
			}
		}
	}
	_, list := f.do(t, "GET", "/contacts/1/tasks", "")
	if n := len(list["data"].([]any)); n != 0 {
		t.Errorf("tasks left: %d", n)
	}
}

// TestTaskPutAppliesOnTopOfConcurrentWrite holds a concurrent writer's
// uncommitted change to a task (transaction A), sends a PUT (B) that must
// wait for A's row lock, then commits A: B's answer and the stored task
// carry both changes. Before the fix B read the task unlocked, patched it
// in Go and wrote every column back, undoing A (a completion was lost to a
// rename).
func TestTaskPutAppliesOnTopOfConcurrentWrite(t *testing.T) {
	t.Parallel()
	f := setup(t)
	tests := []struct {
		name   string
		writeA string // $1 = task id
		put    string
		want   map[string]any // fields of B's answer and of the stored task
	}{
		{
			name:   "completion survives a rename",
			writeA: `UPDATE tasks SET status = 'completed', completed_at = '2026-01-02 03:04:05Z', updated_at = now() WHERE id = $1`,
			put:    `{"title":"Call back on Monday"}`,
			want: map[string]any{"title": "Call back on Monday", "status": "completed",
				"completed_at": "2026-01-02T03:04:05.000000Z", "priority": "low"},
		},
		{
			name:   "priority survives a completion, which keeps its time",
			writeA: `UPDATE tasks SET priority = 'high', status = 'completed', completed_at = '2026-01-02 03:04:05Z' WHERE id = $1`,
			put:    `{"title":"Call back","status":"completed"}`,
			want: map[string]any{"title": "Call back", "status": "completed",
				"completed_at": "2026-01-02T03:04:05.000000Z", "priority": "high"},
		},
		{
			name:   "reopening clears the concurrent completion",
			writeA: `UPDATE tasks SET status = 'completed', completed_at = now(), due_time = '09:00' WHERE id = $1`,
			put:    `{"title":"Call back","status":"open"}`,
			want:   map[string]any{"title": "Call back", "status": "open", "completed_at": nil, "due_time": "09:00"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			st, body := f.do(t, "POST", "/contacts/1/tasks", `{"title":"Call back","priority":"low"}`)
			if st != 201 {
				t.Fatalf("create: %d %v", st, body)
			}
			tid := int64(body["data"].(map[string]any)["id"].(float64))
			path := "/contacts/1/tasks/" + strconv.FormatInt(tid, 10)

			// A: an uncommitted write, holding the task's row lock.
			commitA, pidA := testdb.HoldWriter(t, f.db, tt.writeA, tid)

			// B: a PUT, which must wait for A.
			req, err := http.NewRequest("PUT", f.srv.URL+path, strings.NewReader(tt.put))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Authorization", "Bearer "+f.token)
			req.Header.Set("Content-Type", "application/json")
			type result struct {
				status int
				body   map[string]any
			}
			res := make(chan result, 1)
			done := make(chan error, 1)
			go func() {
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					done <- err
					return
				}
				defer resp.Body.Close()
				var r result
				r.status = resp.StatusCode
				err = json.NewDecoder(resp.Body).Decode(&r.body)
				res <- r
				done <- err
			}()
			testdb.WaitBlockedBy(t, f.db, pidA, done)
			commitA()
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			r := <-res
			if r.status != 200 {
				t.Fatalf("PUT: %d %v", r.status, r.body)
			}
			_, stored := f.do(t, "GET", path, "")
			for _, got := range []struct {
				what string
				rec  map[string]any
			}{{"answer", r.body["data"].(map[string]any)}, {"stored task", stored["data"].(map[string]any)}} {
				sub := map[string]any{}
				for k := range tt.want {
					sub[k] = got.rec[k]
				}
				if diff := cmp.Diff(tt.want, sub); diff != "" {
					t.Errorf("%s (-want +got):\n%s", got.what, diff)
				}
			}
		})
	}
}
