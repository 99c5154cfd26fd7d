package dealsapitest_test

import (
	"testing"

	"github.com/opencrm/crm/pkg/contract/dealsapi"
	"github.com/opencrm/crm/pkg/contract/dealsapi/dealsapitest"
	"github.com/opencrm/crm/pkg/contract/propertyapi"
	"github.com/opencrm/crm/pkg/svcclient"
)

const secret = "test-internal-secret-0123456789"

type fakeBackend struct {
	f   *dealsapitest.Fake
	c   *dealsapi.Client
	url string
}

func (b fakeBackend) Client() *dealsapi.Client { return b.c }
func (b fakeBackend) Properties() *propertyapi.Client {
	return propertyapi.NewClient(svcclient.New("deals", b.url, secret))
}
func (b fakeBackend) Define(_ *testing.T, defs ...propertyapi.PropertyInput) { b.f.Define(defs...) }
func (fakeBackend) Company() int64                                           { return 100 }
func (fakeBackend) Contact() int64                                           { return 500 }
func (fakeBackend) Lead() int64                                              { return 7 }

func TestFakeKeepsTheContract(t *testing.T) {
	t.Parallel()
	is := func(want int64) func(int64) bool { return func(id int64) bool { return id == want } }
	f := dealsapitest.NewFake(secret, dealsapitest.References{Company: is(100), Contact: is(500), Lead: is(7)})
	srv, c := f.Start(t)
	dealsapitest.Run(t, fakeBackend{f, c, srv.URL})
}
