package leadsapitest_test

import (
	"context"
	"testing"

	"github.com/opencrm/crm/pkg/contract/historyapi"
	"github.com/opencrm/crm/pkg/contract/leadsapi"
	"github.com/opencrm/crm/pkg/contract/leadsapi/leadsapitest"
	"github.com/opencrm/crm/pkg/history"
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

// TestFakeRecordsTheCaller: each lead of a batch keeps who the batch's
// request acted for and how (the headers svcclient sends from the
// caller's context).
func TestFakeRecordsTheCaller(t *testing.T) {
	t.Parallel()
	f := leadsapitest.NewFake(secret)
	srv := f.Start(t)
	c := leadsapi.New(srv.URL, secret)
	key := int64(3)
	ctx := history.WithVia(history.WithActor(context.Background(),
		historyapi.HistoryActor{Type: historyapi.ActorAPIKey, ID: &key, Name: "Website form"}), historyapi.ViaIntake)
	res, err := c.CreateLeads(ctx, []leadsapi.NewLead{
		{Key: "a", Lead: leadsapi.LeadInput{FirstName: "Ada", LastName: "L"}},
		{Key: "b", Lead: leadsapi.LeadInput{FirstName: "Bo", LastName: "D"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := leadsapitest.Caller{Actor: `{"type":"api_key","id":3,"name":"Website form"}`, Via: "intake"}
	for _, r := range res {
		if got := f.CreatedBy(r.ID); r.Err != nil || got != want {
			t.Errorf("lead %d (%v) created by %+v, want %+v", r.ID, r.Err, got, want)
		}
	}
}
