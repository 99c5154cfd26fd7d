package intake

import (
	"testing"

	"github.com/opencrm/crm/pkg/contract/envelope"
	"github.com/opencrm/crm/pkg/contract/intakeapi"
)

// TestWireTypes keeps the records this package encodes and the bodies it
// decodes equal to the public wire types the OpenAPI document is
// generated from (pkg/contract): same JSON fields, same nullability.
func TestWireTypes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name          string
		service, wire any
		namesOnly     bool
	}{
		{"Submission", Submission{}, intakeapi.Submission{}, false},
		{"LeadSubmission", Input{}, intakeapi.LeadSubmission{}, true},
		{"SubmissionAnswer", queuedBody{}, intakeapi.SubmissionAnswer{}, true},
	}
	for _, tc := range tests {
		for _, m := range envelope.FieldMismatches(tc.service, tc.wire, tc.namesOnly) {
			t.Errorf("%s: %s", tc.name, m)
		}
	}
}
