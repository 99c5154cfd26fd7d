package dealsapitest_test

import (
	"testing"

	"github.com/opencrm/crm/pkg/contract/dealsapi"
	"github.com/opencrm/crm/pkg/contract/dealsapi/dealsapitest"
)

type fakeBackend struct{ c *dealsapi.Client }

func (b fakeBackend) Client() *dealsapi.Client { return b.c }
func (fakeBackend) Company() int64             { return 100 }
func (fakeBackend) Contact() int64             { return 500 }
func (fakeBackend) Lead() int64                { return 7 }

func TestFakeKeepsTheContract(t *testing.T) {
	t.Parallel()
	is := func(want int64) func(int64) bool { return func(id int64) bool { return id == want } }
	f := dealsapitest.NewFake("test-internal-secret-0123456789",
		dealsapitest.References{Company: is(100), Contact: is(500), Lead: is(7)})
	_, c := f.Start(t)
	dealsapitest.Run(t, fakeBackend{c})
}
