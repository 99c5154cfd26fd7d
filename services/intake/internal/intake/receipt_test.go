package intake

import (
	"context"
	"errors"
	"fmt"
	"net"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/opencrm/crm/pkg/contract/intakeapi"
	"github.com/opencrm/crm/pkg/contract/leadsapi"
	"github.com/opencrm/crm/pkg/fault"
	"github.com/opencrm/crm/pkg/patch"
	"github.com/opencrm/crm/pkg/problem"
)

func TestReceiptFor(t *testing.T) {
	t.Parallel()
	lead := int64(88)
	tests := []struct {
		name string
		sub  intakeapi.Submission
		want Receipt
	}{
		{"spam looks created", intakeapi.Submission{ID: 5, Status: StatusSpam}, Receipt{LeadID: 5}},
		{"delivered is its lead", intakeapi.Submission{ID: 6, Status: StatusDelivered, LeadID: &lead}, Receipt{LeadID: 88}},
		{"pending is queued", intakeapi.Submission{ID: 7, Status: StatusPending}, Receipt{QueuedID: 7}},
		{"failed is queued", intakeapi.Submission{ID: 8, Status: StatusFailed}, Receipt{QueuedID: 8}},
	}
	for _, tc := range tests {
		if diff := cmp.Diff(tc.want, receiptFor(Submission{Submission: tc.sub})); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, diff)
		}
	}
}

func TestReceiptOutcome(t *testing.T) {
	t.Parallel()
	for want, r := range map[string]Receipt{
		"created": {LeadID: 1}, "queued": {QueuedID: 2}, "failed": {Refusal: fault.Invalid("email", "is blocked")},
	} {
		if got := r.Outcome(); got != want {
			t.Errorf("%+v: %q, want %q", r, got, want)
		}
	}
}

// TestRefusalAndLastError: what leads refuses (as its client passes it on)
// fails the submission with the refusal's words; anything else leaves it
// queued, described without internal detail.
func TestRefusalAndLastError(t *testing.T) {
	t.Parallel()
	invalid := fault.Invalid("email", "is blocked")
	tests := []struct {
		name        string
		err         error
		wantRefusal bool
		wantLast    string
	}{
		{"invalid, as the client passes it on", problem.FromFault(invalid), true,
			"validation_failed: one or more fields are invalid; email is blocked"},
		{"conflict", fault.Conflict("idempotency_key_reused", "used"), true, "idempotency_key_reused: used"},
		{"unavailable", problem.FromFault(fault.Unavailablef(5, "leads is unavailable")), false,
			"upstream_unavailable: leads is unavailable"},
		{"timeout", fmt.Errorf("batch: %w", context.DeadlineExceeded), false,
			"upstream_unavailable: a dependency of the service is unavailable; retry later"},
		{"network", &net.OpError{Op: "dial", Err: errors.New("refused")}, false,
			"upstream_unavailable: a dependency of the service is unavailable; retry later"},
		{"anything else", errors.New("boom at 10.0.0.7:8083"), false, "internal: an internal error occurred"},
	}
	for _, tc := range tests {
		if got := refusal(tc.err) != nil; got != tc.wantRefusal {
			t.Errorf("%s: refusal = %v, want %v", tc.name, got, tc.wantRefusal)
		}
		if diff := cmp.Diff(tc.wantLast, lastError(tc.err)); diff != "" {
			t.Errorf("%s: lastError (-want +got):\n%s", tc.name, diff)
		}
	}
}

// TestLeadIsTheSubmission: the lead forwarded is built from the stored
// submission alone, empty optional fields left out.
func TestLeadIsTheSubmission(t *testing.T) {
	t.Parallel()
	s := Submission{Submission: intakeapi.Submission{FirstName: "Ada", LastName: "L", Email: "a@b.example", Company: "Analytical", Source: DefaultSource}}
	want := leadsapi.LeadInput{FirstName: "Ada", LastName: "L", Email: patch.Of("a@b.example"),
		Company: patch.Of("Analytical"), Source: patch.Of(DefaultSource)}
	if diff := cmp.Diff(want, LeadOf(s)); diff != "" {
		t.Errorf("lead (-want +got):\n%s", diff)
	}
}
