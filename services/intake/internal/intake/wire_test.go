package intake

import (
	"testing"

	"github.com/opencrm/crm/pkg/contract/envelope/wiretest"
	"github.com/opencrm/crm/pkg/contract/intakeapi"
)

// TestWireTypes keeps the records this package encodes and the bodies it
// decodes equal to the public wire types the OpenAPI document is
// generated from (pkg/contract): same JSON fields, same nullability. (The
// answer to a submission is encoded from intakeapi.SubmissionAnswer itself.)
func TestWireTypes(t *testing.T) {
	t.Parallel()
	wiretest.Check(t, []wiretest.Case{
		{Name: "Submission", Service: Submission{}, Wire: intakeapi.Submission{}},
		{Name: "LeadSubmission", Service: Input{}, Wire: intakeapi.LeadSubmission{}, NamesOnly: true},
	})
}
