package store

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/shopspring/decimal"

	"github.com/opencrm/crm/pkg/contract/identityapi/identityapitest"
	"github.com/opencrm/crm/pkg/directory"
	"github.com/opencrm/crm/pkg/fault"
	"github.com/opencrm/crm/pkg/testdb"
	"github.com/opencrm/crm/services/deals/internal/deals"
)

const secret = "test-internal-secret-0123456789"

// newStore is a store on a fresh database cloned from the migrated
// template: the seeded pipeline of six stages, no deals.
func newStore(t *testing.T) *Store {
	t.Helper()
	d := testdb.New(t, "deals", Migrate, MigrationSets...)
	_, idc := identityapitest.NewFake(secret).Start(t)
	users, err := directory.NewUsers(d, idc)
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(d, users)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// pipeline is the stages' names by position.
func pipeline(t *testing.T, s *Store) []string {
	t.Helper()
	st, err := s.ListStages(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for i, x := range st {
		if x.Position != i+1 {
			t.Errorf("stage %q at position %d, want %d", x.Name, x.Position, i+1)
		}
		out = append(out, x.Name)
	}
	return out
}

// TestStagePositions: a stage goes where it is asked (clamped to the
// pipeline), last without a position, and the others shift so positions
// stay 1..n.
func TestStagePositions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newStore(t)
	steps := []struct {
		name string
		do   func() error
		want []string
	}{
		{"appended", func() error {
			_, err := s.CreateStage(ctx, deals.StageRecord{Name: "Demo", Outcome: deals.StatusOpen})
			return err
		}, []string{"Prospecting", "Qualification", "Proposal", "Negotiation", "Closed Won", "Closed Lost", "Demo"}},
		{"inserted at 2", func() error {
			_, err := s.CreateStage(ctx, deals.StageRecord{Name: "Call", Position: ptr(2), Outcome: deals.StatusOpen})
			return err
		}, []string{"Prospecting", "Call", "Qualification", "Proposal", "Negotiation", "Closed Won", "Closed Lost", "Demo"}},
		{"a position past the end is last", func() error {
			st, err := s.FirstStage(ctx, deals.StatusOpen)
			if err != nil {
				return err
			}
			_, err = s.UpdateStage(ctx, st.ID, deals.StageRecord{Name: st.Name, Position: ptr(99), Outcome: st.Outcome})
			return err
		}, []string{"Call", "Qualification", "Proposal", "Negotiation", "Closed Won", "Closed Lost", "Demo", "Prospecting"}},
		{"deleted", func() error {
			st, err := s.FirstStage(ctx, deals.StatusOpen)
			if err != nil {
				return err
			}
			return s.DeleteStage(ctx, st.ID)
		}, []string{"Qualification", "Proposal", "Negotiation", "Closed Won", "Closed Lost", "Demo", "Prospecting"}},
	}
	for _, step := range steps {
		if err := step.do(); err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		if diff := cmp.Diff(step.want, pipeline(t, s)); diff != "" {
			t.Errorf("%s: pipeline (-want +got):\n%s", step.name, diff)
		}
	}
}

// TestStageRefusals: what the pipeline refuses, as faults.
func TestStageRefusals(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newStore(t)
	first, err := s.FirstStage(ctx, deals.StatusOpen)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateDeal(ctx, deals.DealRecord{Title: "In it", Value: decimal.Zero, Currency: "USD", StageID: first.ID}); err != nil {
		t.Fatal(err)
	}
	all, err := s.ListStages(ctx)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		do   func() error
		want *fault.Error
	}{
		{"a taken name", func() error {
			_, err := s.CreateStage(ctx, deals.StageRecord{Name: first.Name, Outcome: deals.StatusOpen})
			return err
		}, fault.Invalid("name", "is already used by another stage")},
		{"the outcome of a stage holding deals", func() error {
			_, err := s.UpdateStage(ctx, first.ID, deals.StageRecord{Name: first.Name, Outcome: deals.StatusWon})
			return err
		}, fault.Conflict("stage_in_use", "the outcome of a stage that holds deals cannot change; move its deals first")},
		{"deleting a stage holding deals", func() error { return s.DeleteStage(ctx, first.ID) },
			fault.Conflict("stage_in_use", "the stage holds deals; move them to another stage first")},
		{"an unknown stage", func() error { return s.DeleteStage(ctx, 999_999) }, fault.NotFound("deal stage")},
		{"the last stage", func() error {
			for _, st := range all[1:] {
				if err := s.DeleteStage(ctx, st.ID); err != nil {
					return err
				}
			}
			// Empty the first stage, then it is the last one left.
			if _, err := s.db.Exec(ctx, `DELETE FROM deals`); err != nil {
				return err
			}
			return s.DeleteStage(ctx, first.ID)
		}, fault.Conflict("conflict", "the pipeline needs at least one stage")},
	}
	for _, tc := range tests {
		err := tc.do()
		var got *fault.Error
		if !errors.As(err, &got) {
			t.Fatalf("%s: err = %v, want %v", tc.name, err, tc.want)
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%s: fault (-want +got):\n%s", tc.name, diff)
		}
	}
}

// TestRefreshCompany: a company event renames its deals unless a deal's
// name comes from the same or a newer version; only a changed name moves
// updated_at.
func TestRefreshCompany(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newStore(t)
	first, err := s.FirstStage(ctx, deals.StatusOpen)
	if err != nil {
		t.Fatal(err)
	}
	jan, feb := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC)
	d, err := s.CreateDeal(ctx, deals.DealRecord{Title: "Named", Value: decimal.Zero, Currency: "USD", StageID: first.ID,
		CompanyID: ptr[int64](100), CompanyName: ptr("Acme"), CompanyUpdatedAt: &jan})
	if err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		name    string
		company string
		version time.Time
		changed int64
		want    string
	}{
		{"the same version", "Acme Corp", jan, 0, "Acme"},
		{"a newer version", "Acme Corp", feb, 1, "Acme Corp"},
		{"an older version after it", "Acme", jan, 0, "Acme Corp"},
	}
	for _, step := range steps {
		n, err := s.RefreshCompany(ctx, 100, step.company, step.version)
		if err != nil {
			t.Fatal(err)
		}
		got, err := s.GetDeal(ctx, d.ID)
		if err != nil {
			t.Fatal(err)
		}
		if n != step.changed || *got.CompanyName != step.want {
			t.Errorf("%s: %d changed, name %q; want %d, %q", step.name, n, *got.CompanyName, step.changed, step.want)
		}
	}
}

func ptr[T any](v T) *T { return &v }
