package leadsapitest_test

import (
	"testing"

	"github.com/opencrm/crm/pkg/contract/leadsapi"
	"github.com/opencrm/crm/pkg/contract/leadsapi/leadsapitest"
)

const secret = "test-internal-secret-0123456789"

type fakeBackend struct {
	f *leadsapitest.Fake
	c *leadsapi.Client
	n int64
}

func (b *fakeBackend) Client() *leadsapi.Client { return b.c }

func (b *fakeBackend) CreateLead(_ testing.TB, first, last, email string) int64 {
	b.n++
	b.f.AddLead(b.n, map[string]any{"first_name": first, "last_name": last, "email": email})
	return b.n
}

func TestFakeKeepsTheContract(t *testing.T) {
	t.Parallel()
	f := leadsapitest.NewFake(secret)
	srv := f.Start(t)
	leadsapitest.Run(t, &fakeBackend{f: f, c: leadsapi.New(srv.URL, secret)})
}
