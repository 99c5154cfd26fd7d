package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/opencrm/crm/pkg/fault"
	"github.com/opencrm/crm/services/intake/internal/intake"
)

// TestReceiptsReplay: every kind of receipt a key completes with is read
// back as it was stored, whether Finish or CompleteIdem stored it.
func TestReceiptsReplay(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t, time.Minute)
	ctx := context.Background()
	refused := fault.Validation(fault.Field{Field: "email", Message: "is blocked"})
	tests := []struct {
		name    string
		receipt intake.Receipt
		orphan  bool // completed by CompleteIdem instead of Finish
	}{
		{"created", intake.Receipt{LeadID: 7}, false},
		{"queued", intake.Receipt{QueuedID: 12}, false},
		{"refused", intake.Receipt{Refusal: refused}, false},
		{"refused conflict", intake.Receipt{Refusal: fault.Conflict("duplicate", "taken").With("lead_id", float64(3))}, false},
		{"orphan", intake.Receipt{QueuedID: 13}, true},
	}
	for i, tc := range tests {
		idem := intake.Idem{APIKeyID: 1, Key: tc.name, Hash: []byte{byte(i)}}
		first, err := s.Accept(ctx, submission(time.Minute), &idem)
		if err != nil {
			t.Fatal(err)
		}
		if tc.orphan {
			err = s.CompleteIdem(ctx, idem, tc.receipt)
		} else {
			err = s.Finish(ctx, intake.Outcome{ID: first.Submission.ID, Status: intake.StatusPending,
				NextAttemptAt: time.Now(), Idem: &idem, Receipt: &tc.receipt})
		}
		if err != nil {
			t.Fatal(err)
		}
		again, err := s.Accept(ctx, submission(time.Minute), &idem)
		if err != nil || again.Replay == nil {
			t.Fatalf("%s: replay = %+v, %v", tc.name, again, err)
		}
		want := tc.receipt
		want.Replayed = true
		if diff := cmp.Diff(want, *again.Replay); diff != "" {
			t.Errorf("%s: replay (-want +got):\n%s", tc.name, diff)
		}
	}
}

// TestAnswersStoredBeforeReceiptsReplay is the expand step of migration
// 002: a key completed with the HTTP answer (status and body), as every
// key was before, is replayed as the receipt that answer tells.
func TestAnswersStoredBeforeReceiptsReplay(t *testing.T) {
	t.Parallel()
	s, d := newStore(t, time.Minute)
	ctx := context.Background()
	tests := []struct {
		name   string
		status int
		body   string
		want   intake.Receipt
	}{
		{"created", 201, `{"success":true,"data":{"id":88},"message":"Lead created successfully"}`,
			intake.Receipt{LeadID: 88, Replayed: true}},
		{"queued", 202, `{"success":true,"data":{"id":null,"submission_id":301},"message":"Lead accepted; it will be created as soon as the leads service is available"}`,
			intake.Receipt{QueuedID: 301, Replayed: true}},
		{"refused", 422, `{"type":"/docs/problems#validation_failed","title":"Unprocessable Entity","status":422,"detail":"one or more fields are invalid","code":"validation_failed","errors":[{"field":"email","message":"is blocked"}],"request_id":"r1"}`,
			intake.Receipt{Refusal: fault.Validation(fault.Field{Field: "email", Message: "is blocked"}), Replayed: true}},
	}
	for i, tc := range tests {
		hash := []byte{byte(i), 'x'}
		// The statements the service ran before migration 002.
		if _, err := d.Exec(ctx, `INSERT INTO idempotency_requests (api_key_id, key, request_hash, state)
			VALUES (1, $1, $2, 'in_flight')`, tc.name, hash); err != nil {
			t.Fatal(err)
		}
		if _, err := d.Exec(ctx, `UPDATE idempotency_requests SET state = 'done', status = $3, response = $4
			WHERE api_key_id = $1 AND key = $2`, 1, tc.name, tc.status, []byte(tc.body)); err != nil {
			t.Fatal(err)
		}
		got, err := s.Accept(ctx, submission(time.Minute), &intake.Idem{APIKeyID: 1, Key: tc.name, Hash: hash})
		if err != nil || got.Replay == nil {
			t.Fatalf("%s: %+v, %v", tc.name, got, err)
		}
		if diff := cmp.Diff(tc.want, *got.Replay); diff != "" {
			t.Errorf("%s: receipt (-want +got):\n%s", tc.name, diff)
		}
		if tc.want.Refusal != nil && !errors.Is(got.Replay.Refusal, tc.want.Refusal) {
			t.Errorf("%s: refusal %v", tc.name, got.Replay.Refusal)
		}
	}
}
