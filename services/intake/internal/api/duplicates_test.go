package api_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/opencrm/crm/services/intake/internal/intake"
)

const created = `"message":"Lead created successfully"}`

// TestSubmissionNamesTheRecordItRepeats: a submission whose email (in any
// case) a contact already has names that contact in duplicate_of, else
// the oldest other lead with it; its lead is created all the same. One
// nobody has, a failed lookup (best effort), a honeypot hit and a
// refusal carry none. A replay answers as the first answer did.
func TestSubmissionNamesTheRecordItRepeats(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		setup func(e *env)
		body  string
		want  string
	}{
		{"a contact's address", func(e *env) {
			e.leads.fake.AddContactEmail("Ada@Example.com", 412)
			e.leads.fake.AddLead(77, map[string]any{"first_name": "Ada", "last_name": "Old", "email": "ada@example.com"})
		}, validBody, `{"success":true,"data":{"id":1001,"duplicate_of":{"contact_id":412}},` + created},
		{"an older lead's address", func(e *env) {
			e.leads.fake.AddLead(78, map[string]any{"first_name": "Ada", "last_name": "Newer", "email": "ada@example.com"})
			e.leads.fake.AddLead(77, map[string]any{"first_name": "Ada", "last_name": "Old", "email": "ADA@example.COM"})
		}, validBody, `{"success":true,"data":{"id":1001,"duplicate_of":{"lead_id":77}},` + created},
		{"a new address", func(e *env) {
			e.leads.fake.AddLead(77, map[string]any{"first_name": "Bo", "last_name": "Other", "email": "bo@example.com"})
		}, validBody, `{"success":true,"data":{"id":1001},` + created},
		{"the lookup failing", func(e *env) {
			e.leads.fake.AddContactEmail("ada@example.com", 412)
			e.leads.fake.DuplicatesDown(true)
		}, validBody, `{"success":true,"data":{"id":1001},` + created},
		{"a honeypot hit", func(e *env) {
			e.leads.fake.AddContactEmail("ada@example.com", 412)
		}, `{"first_name":"Ada","last_name":"Lovelace","email":"ada@example.com","website":"http://spam.example"}`,
			`{"success":true,"data":{"id":1},` + created},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			key := e.newKey(1, 0)
			tc.setup(e)
			r := e.post(key, tc.body, "Idempotency-Key", "form-1")
			if r.status != http.StatusCreated {
				t.Fatalf("status %d %s, want 201", r.status, r.body)
			}
			if diff := cmp.Diff(tc.want, string(r.body)); diff != "" {
				t.Errorf("answer (-want +got):\n%s", diff)
			}
			again := e.post(key, tc.body, "Idempotency-Key", "form-1")
			if again.status != http.StatusCreated || string(again.body) != tc.want || again.header.Get("Idempotent-Replayed") != "true" {
				t.Errorf("replay %d %s (replayed %q), want 201 %s", again.status, again.body, again.header.Get("Idempotent-Replayed"), tc.want)
			}
		})
	}
}

// TestQueuedSubmissionNamesTheRecordItRepeats: with leads down the lead
// waits (202) and the lookup, which goes through leads, fails: no
// duplicate_of. Once the retry job delivered it, the replay of the 202
// does not name the submission's own lead as the one it repeats.
func TestQueuedSubmissionNamesTheRecordItRepeats(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	key := e.newKey(1, 0)
	e.leads.stop()
	r := e.post(key, validBody, "Idempotency-Key", "form-1")
	want := `{"success":true,"data":{"id":null,"submission_id":1},"message":"Lead accepted; it will be created as soon as the leads service is available"}`
	if r.status != http.StatusAccepted || string(r.body) != want {
		t.Fatalf("answer %d %s, want 202 %s", r.status, r.body, want)
	}
	e.leads.restart()
	e.deliverPending(t)
	again := e.post(key, validBody, "Idempotency-Key", "form-1")
	if again.status != http.StatusAccepted || string(again.body) != want {
		t.Errorf("replay %d %s, want 202 %s", again.status, again.body, want)
	}
	// An older lead with the address is named, on the replay too.
	e.leads.fake.AddLead(7, map[string]any{"first_name": "Ada", "last_name": "Old", "email": "ada@example.com"})
	withOld := `{"success":true,"data":{"id":null,"submission_id":1,"duplicate_of":{"lead_id":7}},"message":"Lead accepted; it will be created as soon as the leads service is available"}`
	if again := e.post(key, validBody, "Idempotency-Key", "form-1"); string(again.body) != withOld {
		t.Errorf("replay %d %s, want 202 %s", again.status, again.body, withOld)
	}
}

// TestRefusedSubmissionNamesNothing: leads' refusal is passed on as it
// was given, with no duplicate_of.
func TestRefusedSubmissionNamesNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	key := e.newKey(1, 0)
	e.leads.fake.AddContactEmail("ada@example.com", 412)
	e.leads.mu.Lock()
	e.leads.refuse = true
	e.leads.mu.Unlock()
	r := e.post(key, validBody)
	wantProblem(t, r, 422, "validation_failed", "email")
	if strings.Contains(string(r.body), "duplicate_of") {
		t.Errorf("refusal carries duplicate_of: %s", r.body)
	}
}

// deliverPending runs the retry job's passes until submission 1 is
// delivered.
func (e *env) deliverPending(t *testing.T) {
	t.Helper()
	eventually(t, "delivery", func() bool {
		if _, _, err := e.svc.RetryDue(context.Background()); err != nil {
			t.Fatal(err)
		}
		s, err := e.store.Get(context.Background(), 1)
		return err == nil && s.Status == intake.StatusDelivered
	})
}

// TestDuplicatesUnreportedByDefault: without INTAKE_REPORT_DUPLICATES an
// answer never tells whether the address is a contact's or a lead's: a
// public form's key must not let anyone test who is in the CRM.
func TestDuplicatesUnreportedByDefault(t *testing.T) {
	t.Parallel()
	if intake.DefaultConfig().ReportDuplicates {
		t.Fatal("duplicates are reported by default")
	}
	e := newEnv(t, withoutDuplicates())
	key := e.newKey(1, 0)
	e.leads.fake.AddContactEmail("ada@example.com", 412)
	r := e.post(key, validBody)
	if want := `{"success":true,"data":{"id":1001},` + created; r.status != http.StatusCreated || string(r.body) != want {
		t.Errorf("answer %d %s, want 201 %s", r.status, r.body, want)
	}
}
