package api_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/opencrm/crm/pkg/contract/identityapi"
	"github.com/opencrm/crm/pkg/contract/leadsapi/leadsapitest"
)

// TestLeadsCreatedAsTheAPIKey: leads is told that each lead is the API
// key's (X-Crm-Actor: type api_key, the key's id and name) via intake,
// whether the request delivers it or the retry job does later. The key's
// name is stored with the submission: the retry job, with no request
// around, asks identity nothing (the key may be revoked by then), and one
// pass delivering several keys' submissions makes one call per key.
func TestLeadsCreatedAsTheAPIKey(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	form, partner := "crm_live_"+randHex(16), "crm_live_"+randHex(16)
	e.identity.AddKey(form, identityapi.VerifiedKey{ID: 7, Name: "Website form"})
	e.identity.AddKey(partner, identityapi.VerifiedKey{ID: 8, Name: "Partner feed"})
	byForm := leadsapitest.Caller{Actor: `{"type":"api_key","id":7,"name":"Website form"}`, Via: "intake"}
	byPartner := leadsapitest.Caller{Actor: `{"type":"api_key","id":8,"name":"Partner feed"}`, Via: "intake"}

	if r := e.post(form, validBody); r.status != http.StatusCreated {
		t.Fatalf("inline: %d %s", r.status, r.body)
	}

	e.leads.stop()
	// One stored under an Idempotency-Key, one without: the two ways a
	// submission is stored.
	for _, r := range []result{e.post(partner, validBody, "Idempotency-Key", "feed-1"), e.post(form, validBody)} {
		if r.status != http.StatusAccepted {
			t.Fatalf("while leads is down: %d %s", r.status, r.body)
		}
	}
	rows, err := e.db.Query(ctx, `SELECT api_key_id, api_key_name FROM submissions ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	type keyed struct {
		ID   int64
		Name string
	}
	var stored []keyed
	for rows.Next() {
		var k keyed
		if err := rows.Scan(&k.ID, &k.Name); err != nil {
			t.Fatal(err)
		}
		stored = append(stored, k)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]keyed{{7, "Website form"}, {8, "Partner feed"}, {7, "Website form"}}, stored); diff != "" {
		t.Errorf("submissions' keys (-want +got):\n%s", diff)
	}

	e.identity.RevokeKey(partner)
	e.leads.restart()
	// Both due at once: one pass claims them together.
	if _, err := e.db.Exec(ctx, `UPDATE submissions SET next_attempt_at = now() WHERE status = 'pending'`); err != nil {
		t.Fatal(err)
	}
	if claimed, delivered, err := e.svc.RetryDue(ctx); claimed != 2 || delivered != 2 || err != nil {
		t.Fatalf("retry pass: claimed %d, delivered %d, %v; want both", claimed, delivered, err)
	}
	for id, want := range map[int64]leadsapitest.Caller{1: byForm, 2: byPartner, 3: byForm} {
		s, err := e.store.Get(ctx, id)
		if err != nil || s.LeadID == nil {
			t.Fatalf("submission %d: %+v, %v", id, s, err)
		}
		if got := e.leads.fake.CreatedBy(*s.LeadID); got != want {
			t.Errorf("submission %d's lead %d created by %+v, want %+v", id, *s.LeadID, got, want)
		}
	}
}
