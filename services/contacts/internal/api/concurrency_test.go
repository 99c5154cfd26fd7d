package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/opencrm/crm/pkg/testdb"
)

// TestPutAppliesOnTopOfConcurrentWrite holds a concurrent writer's
// uncommitted change to one field (transaction A), sends a PUT of another
// field (B) that must wait for A's row lock, then commits A: B's answer, the
// stored row and B's event all carry both changes. Before the fix B read the
// row unlocked, patched it in Go and wrote every column back, restoring A's
// field to its old value.
func TestPutAppliesOnTopOfConcurrentWrite(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tests := []struct {
		name   string
		create string         // POST path, and the PUT's without the id
		body   map[string]any // POST body
		writeA string         // A's change, $1 = id
		put    map[string]any // B's body
		event  string
		want   map[string]any // fields of B's answer, of the row and of B's event
	}{
		{
			name:   "contact phone survives a job title PUT",
			create: "/contacts", body: map[string]any{"first_name": "Ada", "last_name": "Lovelace", "phone": "+1 555 0100"},
			writeA: `UPDATE contacts SET phone = '+1 555 0199', updated_at = now() WHERE id = $1`,
			put:    map[string]any{"first_name": "Ada", "last_name": "Lovelace", "job_title": "Countess"},
			event:  "contact.updated",
			want:   map[string]any{"phone": "+1 555 0199", "job_title": "Countess", "first_name": "Ada", "mobile": nil},
		},
		{
			name:   "contact status survives a notes PUT",
			create: "/contacts", body: map[string]any{"first_name": "Grace", "last_name": "Hopper", "status": "active"},
			writeA: `UPDATE contacts SET status = 'inactive', updated_at = now() WHERE id = $1`,
			put:    map[string]any{"first_name": "Grace", "last_name": "Hopper", "notes": "call in May"},
			event:  "contact.updated",
			want:   map[string]any{"status": "inactive", "notes": "call in May", "last_name": "Hopper"},
		},
		{
			name:   "company phone survives an industry PUT",
			create: "/companies", body: map[string]any{"name": "Initech", "phone": "1"},
			writeA: `UPDATE companies SET phone = '2', updated_at = now() WHERE id = $1`,
			put:    map[string]any{"name": "Initech", "industry": "Software"},
			event:  "company.updated",
			want:   map[string]any{"phone": "2", "industry": "Software", "name": "Initech"},
		},
		{
			name:   "company name survives a website PUT",
			create: "/companies", body: map[string]any{"name": "Acme"},
			writeA: `UPDATE companies SET domain = 'acme.test', updated_at = now() WHERE id = $1`,
			put:    map[string]any{"name": "Acme", "website": "https://acme.test"},
			event:  "company.updated",
			want:   map[string]any{"domain": "acme.test", "website": "https://acme.test", "name": "Acme"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			r := e.do(t, "POST", tt.create, e.user, tt.body)
			wantStatus(t, r, 201)
			rid := id(t, r)

			// A: an uncommitted write to one field, holding the row lock.
			commitA, pidA := testdb.HoldWriter(t, e.db, tt.writeA, rid)

			// B: a PUT of another field, which must wait for A.
			b, err := json.Marshal(tt.put)
			if err != nil {
				t.Fatal(err)
			}
			req := httptest.NewRequest("PUT", fmt.Sprintf("%s/%d", tt.create, rid), bytes.NewReader(b))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer "+e.user)
			done := make(chan *httptest.ResponseRecorder, 1)
			go func() {
				rec := httptest.NewRecorder()
				e.h.ServeHTTP(rec, req)
				done <- rec
			}()
			testdb.WaitBlockedBy(t, e.db, pidA, done)
			commitA()
			rec := <-done
			var answer struct {
				Data map[string]any `json:"data"`
			}
			if rec.Code != 200 {
				t.Fatalf("PUT: %d %s", rec.Code, rec.Body.Bytes())
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &answer); err != nil {
				t.Fatal(err)
			}

			stored := dataOf(t, e.do(t, "GET", fmt.Sprintf("%s/%d", tt.create, rid), e.user, nil))
			var payload []byte
			if err := e.db.QueryRow(ctx, `SELECT payload::text FROM outbox WHERE type = $1 AND aggregate_id = $2
				ORDER BY id DESC LIMIT 1`, tt.event, fmt.Sprint(rid)).Scan(&payload); err != nil {
				t.Fatal(err)
			}
			var event map[string]any
			if err := json.Unmarshal(payload, &event); err != nil {
				t.Fatal(err)
			}
			for _, got := range []struct {
				what string
				rec  map[string]any
			}{{"answer", answer.Data}, {"stored row", stored}, {"event", event}} {
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
