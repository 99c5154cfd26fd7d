package privacyapitest_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/opencrm/crm/pkg/contract/historyapi"
	"github.com/opencrm/crm/pkg/contract/privacyapi"
	"github.com/opencrm/crm/pkg/contract/privacyapi/privacyapitest"
	"github.com/opencrm/crm/pkg/fault"
	"github.com/opencrm/crm/pkg/history"
)

const secret = "fake-secret-0123456789abcdef"

// TestFake: the fake answers as pkg/privacy.Mount does: the scripted
// export; an erasure once per id (a repeat answers the first part, a
// different subject is a conflict); 503 while down or failing; 401
// without the secret; and it records who asked.
func TestFake(t *testing.T) {
	t.Parallel()
	ctx := history.WithVia(history.WithActor(context.Background(),
		historyapi.HistoryActor{Type: historyapi.ActorUser, ID: new(int64(7)), Name: "Ann Admin"}), historyapi.ViaErasure)
	f := privacyapitest.New(t, privacyapi.Contacts, secret)
	c := f.Client()
	s := privacyapi.Subject{Email: "ann@example.com"}

	got, err := c.Export(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(privacyapi.ExportPart{Data: json.RawMessage(`{}`)}, got); diff != "" {
		t.Errorf("default export (-want +got):\n%s", diff)
	}

	f.Answer(privacyapi.ExportPart{Found: privacyapi.Found{ContactIDs: []int64{4}}, Data: json.RawMessage(`{"contacts":[{"id":4}]}`)},
		privacyapi.ErasePart{Found: privacyapi.Found{ContactIDs: []int64{4}}, Receipt: privacyapi.Receipt{Erased: map[string]int64{"contacts": 1}}})
	got, err = c.Export(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]int64{4}, got.ContactIDs); diff != "" || string(got.Data) != `{"contacts":[{"id":4}]}` {
		t.Errorf("scripted export: %+v %s", got, got.Data)
	}

	want := privacyapi.ErasePart{Found: privacyapi.Found{ContactIDs: []int64{4}}, Receipt: privacyapi.Receipt{
		Context: privacyapi.Contacts, Status: privacyapi.StatusCompleted, Erased: map[string]int64{"contacts": 1},
		Redacted: map[string]int64{}, Kept: []privacyapi.Kept{}}}
	for range 2 {
		part, err := c.Erase(ctx, 9, s)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, part); diff != "" {
			t.Errorf("erase (-want +got):\n%s", diff)
		}
	}
	f.Answer(privacyapi.ExportPart{}, privacyapi.ErasePart{})
	if part, err := c.Erase(ctx, 9, s); err != nil || part.Receipt.Erased["contacts"] != 1 {
		t.Errorf("a repeated erasure answers the first part: %+v, %v", part, err)
	}
	if _, err := c.Erase(ctx, 9, privacyapi.Subject{Email: s.Email, LeadIDs: []int64{2}}); fault.KindOf(err) != fault.KindConflict {
		t.Errorf("other ids under one erasure id: %v, want a conflict", err)
	}

	f.FailNext(1)
	if _, err := c.Export(ctx, s); fault.KindOf(err) != fault.KindUnavailable {
		t.Errorf("failing: %v, want unavailable", err)
	}
	if _, err := c.Export(ctx, s); err != nil {
		t.Errorf("after one failure: %v", err)
	}
	f.Down(true)
	if _, err := c.Erase(ctx, 10, s); fault.KindOf(err) != fault.KindUnavailable {
		t.Errorf("down: %v, want unavailable", err)
	}
	f.Down(false)
	if _, err := privacyapi.New("contacts", f.URL, "wrong-secret-wrong-secret").Export(ctx, s); err == nil {
		t.Error("a wrong secret was let through")
	}

	var statuses []int
	for _, call := range f.Calls() {
		statuses = append(statuses, call.Status)
		if call.Status == http.StatusUnauthorized {
			continue
		}
		if call.Actor.Name != "Ann Admin" || call.Via != historyapi.ViaErasure || call.Subject.Email == "" {
			t.Errorf("call %+v: actor, via or subject missing", call)
		}
	}
	wantStatuses := []int{200, 200, 200, 200, 200, 409, 503, 200, 503, 401}
	if diff := cmp.Diff(wantStatuses, statuses); diff != "" {
		t.Errorf("statuses (-want +got):\n%s", diff)
	}
	if n := len(f.Answered(privacyapitest.OpErase)); n != 3 {
		t.Errorf("answered erasures = %d, want 3", n)
	}
}
