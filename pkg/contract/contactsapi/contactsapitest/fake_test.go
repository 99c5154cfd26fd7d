package contactsapitest_test

import (
	"testing"

	"github.com/opencrm/crm/pkg/contract/contactsapi"
	"github.com/opencrm/crm/pkg/contract/contactsapi/contactsapitest"
)

type fakeBackend struct{ c *contactsapi.Client }

func (b fakeBackend) Client() *contactsapi.Client { return b.c }

func TestFakeKeepsTheContract(t *testing.T) {
	t.Parallel()
	_, c := contactsapitest.NewFake("test-internal-secret-0123456789").Start(t)
	contactsapitest.Run(t, fakeBackend{c})
}
