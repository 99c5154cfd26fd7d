package mergeapitest_test

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/opencrm/crm/pkg/contract/historyapi"
	"github.com/opencrm/crm/pkg/contract/mergeapi"
	"github.com/opencrm/crm/pkg/contract/mergeapi/mergeapitest"
	"github.com/opencrm/crm/pkg/history"
	"github.com/opencrm/crm/pkg/problem"
)

const secret = "test-internal-secret-0123456789"

// TestFakeMovesOnce: the fake moves what pointed at the merged records to
// the survivor and counts it; a repeat moves nothing; each call is
// recorded with the merge id, via merge and the actor the caller named.
func TestFakeMovesOnce(t *testing.T) {
	t.Parallel()
	f := mergeapitest.NewFake("deals", secret)
	_, c := f.Start(t)
	f.Point(mergeapi.Contact, 2, 10, 11)
	f.Point(mergeapi.Contact, 1, 12)
	f.Point(mergeapi.Company, 2, 13)
	ada := int64(1)
	ctx := history.WithActor(context.Background(), historyapi.HistoryActor{Type: historyapi.ActorUser, ID: &ada, Name: "Ada Admin"})
	m := mergeapi.Move{Object: mergeapi.Contact, Into: 1, Merged: []int64{2, 3}}
	for _, want := range []mergeapi.Moved{{"deals": 2}, {"deals": 0}} {
		got, err := c.Move(ctx, 9, m)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("moved (-want +got):\n%s", diff)
		}
	}
	if diff := cmp.Diff([]int64{10, 11, 12}, f.PointingAt(mergeapi.Contact, 1)); diff != "" {
		t.Errorf("contact 1's records (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]int64{13}, f.PointingAt(mergeapi.Company, 2)); diff != "" {
		t.Errorf("company 2's records (-want +got):\n%s", diff)
	}
	call := mergeapitest.Call{ID: 9, Move: m, Via: historyapi.ViaMerge, Actor: `{"type":"user","id":1,"name":"Ada Admin"}`}
	if diff := cmp.Diff([]mergeapitest.Call{call, call}, f.Calls()); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
}

// TestFakeRefusesAndFails: a bad body is mergehttp's 422; a fake that is
// down answers 503 and moves nothing.
func TestFakeRefusesAndFails(t *testing.T) {
	t.Parallel()
	f := mergeapitest.NewFake("leads", secret)
	_, c := f.Start(t)
	f.Point(mergeapi.Company, 2, 10)
	var p *problem.Error
	_, err := c.Move(context.Background(), 1, mergeapi.Move{Object: mergeapi.Company, Into: 2, Merged: []int64{2}})
	if !errors.As(err, &p) || p.Status != http.StatusUnprocessableEntity || len(p.Errors) != 1 || p.Errors[0].Field != "merged[0]" {
		t.Errorf("self-merge: %v, want 422 on merged[0]", err)
	}
	f.SetDown(true)
	_, err = c.Move(context.Background(), 1, mergeapi.Move{Object: mergeapi.Company, Into: 1, Merged: []int64{2}})
	if !errors.As(err, &p) || p.Status != http.StatusServiceUnavailable {
		t.Errorf("down: %v, want 503", err)
	}
	f.SetDown(false)
	if got, err := c.Move(context.Background(), 1, mergeapi.Move{Object: mergeapi.Company, Into: 1, Merged: []int64{2}}); err != nil ||
		!cmp.Equal(got, mergeapi.Moved{"leads": 1}) {
		t.Errorf("after the restart: %v, %v", got, err)
	}
	if n := len(f.Calls()); n != 1 {
		t.Errorf("%d calls reached the move, want 1 (refused and down ones do not)", n)
	}
}
