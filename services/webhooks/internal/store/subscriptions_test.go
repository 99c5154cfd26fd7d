package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/opencrm/crm/pkg/contract/webhooksapi"
	"github.com/opencrm/crm/pkg/fault"
	"github.com/opencrm/crm/services/webhooks/internal/store"
	"github.com/opencrm/crm/services/webhooks/internal/webhooks"
)

// subscribe stores an active subscription of owner; scopes nil is an
// admin person's.
func subscribe(t *testing.T, st *store.Store, owner int64, scopes []string) store.Subscription {
	t.Helper()
	sub, err := st.Create(context.Background(), store.NewSubscription{URL: "https://x.example/", Events: []string{"*"},
		Active: true, Secret: []byte{1}, Fingerprint: "x", CreatedBy: &owner, OwnerScopes: scopes}, 25)
	if err != nil {
		t.Fatal(err)
	}
	return sub
}

// TestApplyOwner: an owner losing access loses the subscriptions that
// access allowed, each saying why, and nothing else changes.
func TestApplyOwner(t *testing.T) {
	t.Parallel()
	st, _ := newStore(t)
	ctx := context.Background()
	t0 := time.Now().Add(-time.Hour)
	token, person := []string{"webhooks:write", "contacts:read"}, []string(nil)
	type state struct {
		Active         bool
		DisabledReason *string
	}
	reason := func(s string) *string { return &s }
	tests := []struct {
		name string
		// before is a state recorded earlier (nil: never heard of).
		before *store.Owner
		now    store.Owner
		// subs are the owner's subscriptions, by their scopes.
		subs         [][]string
		wantDisabled int
		want         []state
	}{
		{"token revoked", nil, store.Owner{Active: false}, [][]string{token, token}, 2,
			[]state{{false, reason(store.ReasonTokenRevoked)}, {false, reason(store.ReasonTokenRevoked)}}},
		{"person deactivated", nil, store.Owner{Active: false, Admin: true}, [][]string{person}, 1,
			[]state{{false, reason(store.ReasonOwnerDeactivated)}}},
		{"admin demoted keeps what a token made", &store.Owner{Active: true, Admin: true}, store.Owner{Active: true},
			[][]string{person, token}, 1, []state{{false, reason(store.ReasonOwnerNotAdmin)}, {true, nil}}},
		{"first heard of as a non-admin", nil, store.Owner{Active: true}, [][]string{person}, 0, []state{{true, nil}}},
		{"still an admin", &store.Owner{Active: true, Admin: true}, store.Owner{Active: true, Admin: true}, [][]string{person}, 0,
			[]state{{true, nil}}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			owner := int64(1000 + i)
			var subs []store.Subscription
			for _, scopes := range tt.subs {
				subs = append(subs, subscribe(t, st, owner, scopes))
			}
			if tt.before != nil {
				b := *tt.before
				b.ID, b.UpdatedAt = owner, t0
				if _, err := st.ApplyOwner(ctx, b); err != nil {
					t.Fatal(err)
				}
			}
			now := tt.now
			now.ID, now.UpdatedAt = owner, t0.Add(time.Minute)
			n, err := st.ApplyOwner(ctx, now)
			if err != nil {
				t.Fatal(err)
			}
			if n != tt.wantDisabled {
				t.Errorf("ApplyOwner disabled %d, want %d", n, tt.wantDisabled)
			}
			var got []state
			for _, s := range subs {
				s, err := st.Get(ctx, s.ID)
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, state{s.Active, s.DisabledReason})
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("subscriptions (-want +got)\n%s", diff)
			}
		})
	}
}

// TestApplyOwnerIgnoresOlderState: a state older than the one recorded
// (events of one user read out of order) changes nothing.
func TestApplyOwnerIgnoresOlderState(t *testing.T) {
	t.Parallel()
	st, _ := newStore(t)
	ctx := context.Background()
	sub := subscribe(t, st, 7, []string{"webhooks:write"})
	now := time.Now()
	if _, err := st.ApplyOwner(ctx, store.Owner{ID: 7, Active: true, UpdatedAt: now}); err != nil {
		t.Fatal(err)
	}
	n, err := st.ApplyOwner(ctx, store.Owner{ID: 7, Active: false, UpdatedAt: now.Add(-time.Minute)})
	if err != nil || n != 0 {
		t.Fatalf("ApplyOwner of an older state = %d, %v; want 0, nil", n, err)
	}
	if got, err := st.Get(ctx, sub.ID); err != nil || !got.Active {
		t.Fatalf("subscription after an older state: active %v, %v", got.Active, err)
	}
}

// TestOwnerRefusals: a create beyond the owner's cap, and a create or an
// activation for an owner who lost access, are conflicts that store
// nothing.
func TestOwnerRefusals(t *testing.T) {
	t.Parallel()
	st, d := newStore(t)
	ctx := context.Background()
	create := func(owner int64, max int) error {
		_, err := st.Create(ctx, store.NewSubscription{URL: "https://x.example/", Events: []string{"*"}, Active: true,
			Secret: []byte{1}, Fingerprint: "x", CreatedBy: &owner, OwnerScopes: []string{"webhooks:write"}}, max)
		return err
	}
	for range 2 {
		if err := create(1, 2); err != nil {
			t.Fatal(err)
		}
	}
	gone := subscribe(t, st, 2, []string{"webhooks:write"})
	if _, err := st.ApplyOwner(ctx, store.Owner{ID: 2, Active: false, UpdatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	activate := true
	_, activateErr := st.Update(ctx, gone, webhooksapi.WebhookInput{Active: &activate})
	tests := []struct {
		name string
		err  error
		want *fault.Error
	}{
		{"beyond the cap", create(1, 2), fault.Conflict("conflict", "an owner may have at most 2 subscriptions; delete one first")},
		{"create for a revoked token", create(2, 25), webhooks.ErrOwnerGone},
		{"activation for a revoked token", activateErr, webhooks.ErrOwnerGone},
	}
	for _, tt := range tests {
		var got *fault.Error
		if !errors.As(tt.err, &got) {
			t.Fatalf("%s: error %v, want a fault", tt.name, tt.err)
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("%s: fault (-want +got)\n%s", tt.name, diff)
		}
	}
	if n := count(t, d, `SELECT count(*) FROM subscriptions`); n != 3 {
		t.Errorf("%d subscriptions stored, want 3", n)
	}
	if got, err := st.Get(ctx, gone.ID); err != nil || got.Active {
		t.Errorf("refused activation: active %v, %v", got.Active, err)
	}
}
