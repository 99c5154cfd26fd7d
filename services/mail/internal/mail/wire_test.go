package mail

import (
	"testing"

	"github.com/opencrm/crm/pkg/contract/envelope/wiretest"
	"github.com/opencrm/crm/pkg/contract/mailapi"
)

// TestWireTypes keeps the records this package encodes and the bodies it
// decodes equal to the public wire types the OpenAPI document is
// generated from (pkg/contract): same JSON fields, same nullability.
func TestWireTypes(t *testing.T) {
	t.Parallel()
	wiretest.Check(t, []wiretest.Case{
		{Name: "EmailSummary", Service: Summary{}, Wire: mailapi.EmailSummary{}},
		{Name: "Email", Service: Message{}, Wire: mailapi.Email{}},
		{Name: "EmailRef", Service: Ref{}, Wire: mailapi.EmailRef{}},
		{Name: "Mailbox", Service: Mailbox{}, Wire: mailapi.Mailbox{}},
		{Name: "EmailInput", Service: MessageInput{}, Wire: mailapi.EmailInput{}, NamesOnly: true},
		{Name: "MailboxInput", Service: MailboxInput{}, Wire: mailapi.MailboxInput{}, NamesOnly: true},
	})
}
