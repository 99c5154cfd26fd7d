package contactsapitest_test

import (
	"testing"

	"github.com/opencrm/crm/pkg/contract/contactsapi"
	"github.com/opencrm/crm/pkg/contract/contactsapi/contactsapitest"
	"github.com/opencrm/crm/pkg/contract/propertyapi"
	"github.com/opencrm/crm/pkg/svcclient"
)

const secret = "test-internal-secret-0123456789"

type fakeBackend struct {
	f   *contactsapitest.Fake
	c   *contactsapi.Client
	url string
}

func (b fakeBackend) Client() *contactsapi.Client { return b.c }
func (b fakeBackend) Properties() *propertyapi.Client {
	return propertyapi.NewClient(svcclient.New("contacts", b.url, secret))
}
func (b fakeBackend) Define(_ *testing.T, object string, defs ...propertyapi.PropertyInput) {
	b.f.Define(object, defs...)
}

func TestFakeKeepsTheContract(t *testing.T) {
	t.Parallel()
	f := contactsapitest.NewFake(secret)
	srv, c := f.Start(t)
	contactsapitest.Run(t, fakeBackend{f, c, srv.URL})
}
