package directory_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/opencrm/crm/pkg/auth"
	"github.com/opencrm/crm/pkg/directory"
	"github.com/opencrm/crm/pkg/problem"
	"github.com/opencrm/crm/pkg/testdb"
)

// TestCheckWrite walks every edit scope against records of every kind of
// owner. Users: 1 admin; 2 company, 3 team, 4 own in team 10; 5 in team
// 10; 6 in team 20; 7 unknown to the model.
func TestCheckWrite(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := testdb.New(t, "dirtest", directory.Migrate, directory.Migrations)
	ten, twenty := int64(10), int64(20)
	for _, u := range []directory.User{
		{ID: 1, Role: auth.RoleAdmin, EditScope: directory.ScopeOwn},
		{ID: 2, Role: auth.RoleUser, TeamID: &ten},
		{ID: 3, Role: auth.RoleUser, TeamID: &ten, EditScope: directory.ScopeTeam},
		{ID: 4, Role: auth.RoleUser, TeamID: &ten, EditScope: directory.ScopeOwn},
		{ID: 5, Role: auth.RoleUser, TeamID: &ten},
		{ID: 6, Role: auth.RoleUser, TeamID: &twenty},
		{ID: 8, Role: auth.RoleUser, EditScope: directory.ScopeTeam},
	} {
		u.Name, u.Email, u.Active, u.UpdatedAt = "u", "u@example.com", true, time.Now()
		if err := directory.Upsert(ctx, d, u); err != nil {
			t.Fatal(err)
		}
	}
	id := func(n int64) *int64 { return &n }
	records := []struct {
		name  string
		owner directory.Owner
	}{
		{"unassigned", directory.Owner{}},
		{"assigned to a teammate", directory.Owner{AssignedTo: id(5)}},
		{"assigned to another team", directory.Owner{AssignedTo: id(6)}},
		{"assigned to caller", directory.Owner{AssignedTo: id(4)}},
		{"created by caller", directory.Owner{AssignedTo: id(6), CreatedBy: id(4)}},
	}
	callers := []struct {
		name string
		id   int64
		role string
		want []bool // per record
	}{
		{"admin", 1, auth.RoleAdmin, []bool{true, true, true, true, true}},
		{"company scope", 2, auth.RoleUser, []bool{true, true, true, true, true}},
		{"team scope", 3, auth.RoleUser, []bool{true, true, false, true, false}},
		{"own scope", 4, auth.RoleUser, []bool{false, false, false, true, true}},
		{"team scope without a team", 8, auth.RoleUser, []bool{true, false, false, false, false}},
		{"unknown to the model (default scope)", 7, auth.RoleUser, []bool{true, true, true, true, true}},
	}
	for _, c := range callers {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			claims := &auth.Claims{Role: c.role}
			claims.Subject = strconv.FormatInt(c.id, 10)
			cctx := auth.WithClaims(ctx, claims)
			var got []bool
			for _, r := range records {
				err := directory.CheckWrite(cctx, d, r.owner)
				if err != nil {
					if p := problem.From(err); p.Status != 403 || p.Code != "forbidden" {
						t.Fatalf("%s: %v, want 403 forbidden", r.name, err)
					}
				}
				got = append(got, err == nil)
			}
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Errorf("allowed per record %v (-want +got):\n%s", records, diff)
			}
		})
	}
	if err := directory.CheckWrite(ctx, d, directory.Owner{AssignedTo: id(6)}); err != nil {
		t.Errorf("internal call (no claims): %v", err)
	}
}
