package store_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"

	"github.com/opencrm/crm/pkg/contract/privacyapi"
	"github.com/opencrm/crm/pkg/db"
	"github.com/opencrm/crm/pkg/privacy"
	"github.com/opencrm/crm/pkg/testdb"
	"github.com/opencrm/crm/services/intake/internal/intake"
	"github.com/opencrm/crm/services/intake/internal/store"
)

// newPrivacyStore is a store on a database migrated as the binary
// migrates it (the idempotency keys of the erasures included).
func newPrivacyStore(t *testing.T) (*store.Store, *store.Privacy, *db.DB) {
	t.Helper()
	d := testdb.New(t, store.Schema, store.Migrate, store.MigrationSets...)
	s, err := store.New(d, store.Options{IdemTTL: 24 * time.Hour, Orphaned: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	p, err := store.NewPrivacy(d)
	if err != nil {
		t.Fatal(err)
	}
	return s, p, d
}

// TestPrivacy: the export lists the submissions of the subject's address
// (whatever its case) or of their leads, and only those, as stored; the
// erasure deletes them and the Idempotency-Key records naming them and
// leaves every other submission and record; a repeated erasure answers
// the first receipt and deletes nothing more.
func TestPrivacy(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, p, d := newPrivacyStore(t)
	accept := func(email, key string) intake.Submission {
		t.Helper()
		in := intake.Input{FirstName: "Ann", LastName: "Doe", Email: email, Phone: "+49 30 1234", Company: "Acme"}
		intake.Normalize(&in)
		var idem *intake.Idem
		if key != "" {
			idem = &intake.Idem{APIKeyID: 1, Key: key, Hash: []byte(key)}
		}
		acc, err := s.Accept(ctx, intake.NewSubmission{APIKeyID: 1, Status: intake.StatusPending, Input: in, Origin: "https://acme.example"}, idem)
		if err != nil {
			t.Fatal(err)
		}
		return acc.Submission
	}
	deliver := func(sub intake.Submission, lead int64, key string) {
		t.Helper()
		o := intake.Outcome{ID: sub.ID, Status: intake.StatusDelivered, LeadID: &lead}
		if key != "" {
			o.Idem = &intake.Idem{APIKeyID: 1, Key: key, Hash: []byte(key)}
			o.Receipt = &intake.Receipt{LeadID: lead}
		}
		if err := s.Finish(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	queued := accept("Ann@Example.com", "k-queued")    // waiting for leads, under a key
	asLead := accept("ann.work@acme.example", "")      // forwarded as the person's lead 55
	delivered := accept("ann@example.com", "k-done")   // delivered as lead 56, its key done
	other := accept("carl@example.com", "k-other")     // someone else's
	lookalike := accept("ann@example.com.invalid", "") // another address
	deliver(asLead, 55, "")
	deliver(delivered, 56, "k-done")
	deliver(other, 57, "k-other")
	subject := privacyapi.Subject{Email: "ANN@example.COM", ContactIDs: []int64{3}, LeadIDs: []int64{55}}

	part, err := p.Export(ctx, subject)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string][]store.SubmissionExport
	if err := json.Unmarshal(part.Data, &doc); err != nil {
		t.Fatal(err)
	}
	exported := func(sub intake.Submission, status string, lead *int64) store.SubmissionExport {
		return store.SubmissionExport{ID: sub.ID, ReceivedAt: sub.CreatedAt, Status: status, LeadID: lead,
			Payload: store.SubmissionPayload{FirstName: "Ann", LastName: "Doe", Email: sub.Email, Phone: "+49 30 1234",
				Company: "Acme", Source: intake.DefaultSource, Origin: "https://acme.example"}}
	}
	l55, l56 := int64(55), int64(56)
	if diff := cmp.Diff(map[string][]store.SubmissionExport{"submissions": {
		exported(queued, intake.StatusPending, nil), exported(asLead, intake.StatusDelivered, &l55),
		exported(delivered, intake.StatusDelivered, &l56),
	}}, doc); diff != "" {
		t.Errorf("export (-want +got):\n%s", diff)
	}
	if part.Found.ContactIDs != nil || part.Found.LeadIDs != nil || part.Found.DealIDs != nil {
		t.Errorf("export found %+v, want nothing for later phases", part.Found)
	}
	nobody, err := p.Export(ctx, privacyapi.Subject{Email: "nobody@example.com"})
	if err != nil {
		t.Fatal(err)
	}
	if string(nobody.Data) != `{"submissions":[]}` {
		t.Errorf("export of nobody = %s", nobody.Data)
	}

	want := privacyapi.ErasePart{Receipt: privacyapi.Receipt{Context: privacyapi.Intake, Status: privacyapi.StatusCompleted,
		Erased: map[string]int64{"submissions": 3}, Redacted: map[string]int64{}, Kept: []privacyapi.Kept{}}}
	for i := range 2 {
		got, err := privacy.Erase(ctx, d, privacyapi.Intake, 8, subject, p)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("erasure %d (-want +got):\n%s", i+1, diff)
		}
	}
	ids := func(sql string) []int64 {
		t.Helper()
		rows, err := d.Query(ctx, sql)
		if err != nil {
			t.Fatal(err)
		}
		out, err := pgx.CollectRows(rows, pgx.RowTo[int64])
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	if diff := cmp.Diff([]int64{other.ID, lookalike.ID}, ids(`SELECT id FROM submissions ORDER BY id`)); diff != "" {
		t.Errorf("submissions left (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]int64{other.ID}, ids(`SELECT submission_id FROM idempotency_requests ORDER BY key`)); diff != "" {
		t.Errorf("idempotency records left (-want +got):\n%s", diff)
	}
	if _, err := s.Get(ctx, queued.ID); err == nil {
		t.Errorf("the erased submission %d is still served", queued.ID)
	}
	// A delivery finishing after the erasure finds nothing to update.
	if err := s.Finish(ctx, intake.Outcome{ID: queued.ID, Status: intake.StatusDelivered, LeadID: &l56}); err != nil {
		t.Fatal(err)
	}
	if n := len(ids(`SELECT id FROM submissions`)); n != 2 {
		t.Errorf("%d submissions after a late finish, want 2", n)
	}
}

// TestPrivacyUsesIndexes: the subject's submissions are found through the
// address and lead indexes, not by scanning the log.
func TestPrivacyUsesIndexes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, _, d := newPrivacyStore(t)
	var plan string
	err := d.InTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SET LOCAL enable_seqscan = off`); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `EXPLAIN SELECT id FROM submissions WHERE lower(email) = lower($1) OR lead_id = ANY($2)`,
			"ann@example.com", []int64{55})
		if err != nil {
			return err
		}
		lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
		for _, l := range lines {
			plan += l + "\n"
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, index := range []string{"submissions_email_lower", "submissions_lead"} {
		if !strings.Contains(plan, index) {
			t.Errorf("plan does not use %s:\n%s", index, plan)
		}
	}
}
