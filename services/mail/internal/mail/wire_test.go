package mail

import (
	"testing"

	"github.com/opencrm/crm/pkg/contract/envelope"
	"github.com/opencrm/crm/pkg/contract/mailapi"
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
		{"EmailSummary", Summary{}, mailapi.EmailSummary{}, false},
		{"Email", Message{}, mailapi.Email{}, false},
		{"EmailRef", Ref{}, mailapi.EmailRef{}, false},
		{"Mailbox", Mailbox{}, mailapi.Mailbox{}, false},
		{"EmailInput", MessageInput{}, mailapi.EmailInput{}, true},
		{"MailboxInput", MailboxInput{}, mailapi.MailboxInput{}, true},
	}
	for _, tc := range tests {
		for _, m := range envelope.FieldMismatches(tc.service, tc.wire, tc.namesOnly) {
			t.Errorf("%s: %s", tc.name, m)
		}
	}
}
