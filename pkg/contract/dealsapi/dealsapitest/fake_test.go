package dealsapitest_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/opencrm/crm/pkg/contract/dealsapi"
	"github.com/opencrm/crm/pkg/contract/dealsapi/dealsapitest"
	"github.com/opencrm/crm/pkg/contract/historyapi"
	"github.com/opencrm/crm/pkg/contract/propertyapi"
	"github.com/opencrm/crm/pkg/history"
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

// TestFakeRecordsTheCaller: a create keeps who its request acted for and
// how (the headers svcclient sends from the caller's context).
func TestFakeRecordsTheCaller(t *testing.T) {
	t.Parallel()
	f := dealsapitest.NewFake(secret, dealsapitest.References{})
	_, c := f.Start(t)
	seven := int64(7)
	ctx := history.WithVia(history.WithActor(context.Background(),
		historyapi.HistoryActor{Type: historyapi.ActorUser, ID: &seven, Name: "Uma User"}), historyapi.ViaQualification)
	id, err := c.SendDeal(ctx, "k1", json.RawMessage(`{"title":"Acme deal","value":"10"}`))
	if err != nil {
		t.Fatal(err)
	}
	want := dealsapitest.Caller{Actor: `{"type":"user","id":7,"name":"Uma User"}`, Via: "qualification"}
	if got := f.CreatedBy(id); got != want {
		t.Errorf("deal created by %+v, want %+v", got, want)
	}
}
