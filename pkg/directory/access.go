package directory

import (
	"context"
	"fmt"
	"net/http"

	"github.com/opencrm/crm/pkg/auth"
	"github.com/opencrm/crm/pkg/db"
	"github.com/opencrm/crm/pkg/httpx"
	"github.com/opencrm/crm/pkg/problem"
)

// Edit scopes: what a non-admin may change (every user reads everything).
const (
	// ScopeCompany allows every record (the default).
	ScopeCompany = "company"
	// ScopeTeam allows records assigned to a member of the user's team,
	// unassigned records and the user's own.
	ScopeTeam = "team"
	// ScopeOwn allows records assigned to or created by the user.
	ScopeOwn = "own"
)

// Owner is who a record belongs to, for write access. Records without an
// assignee (companies, contracts) have a nil AssignedTo; records made
// before their context recorded creators have a nil CreatedBy.
type Owner struct {
	AssignedTo *int64
	CreatedBy  *int64
}

// Caller is the authenticated caller's id, recorded as a record's
// creator; nil for service-to-service calls, which have no user.
func Caller(ctx context.Context) *int64 {
	if c := auth.FromContext(ctx); c != nil {
		id := c.UserID()
		return &id
	}
	return nil
}

// errOutsideScope is the one answer outside the caller's edit scope.
var errOutsideScope = problem.Forbidden("this record is outside your edit scope")

// CheckWrite answers nil when the caller in ctx may change a record owned
// by o, 403 forbidden otherwise. Admins and internal calls (no user) may
// change everything. The caller's scope and team, and the assignee's
// team, come from the read model, so a change made on /users applies as
// soon as its event arrives; a caller the model does not know yet has the
// default scope.
func CheckWrite(ctx context.Context, q db.Querier, o Owner) error {
	c := auth.FromContext(ctx)
	if c == nil || c.IsAdmin() {
		return nil
	}
	me := c.UserID()
	if (o.AssignedTo != nil && *o.AssignedTo == me) || (o.CreatedBy != nil && *o.CreatedBy == me) {
		return nil
	}
	var scope string
	var sameTeam bool
	err := q.QueryRow(ctx, `SELECT coalesce((SELECT edit_scope FROM directory_users WHERE id = $1), 'company'),
		coalesce((SELECT u.team_id = a.team_id FROM directory_users u, directory_users a WHERE u.id = $1 AND a.id = $2), false)`,
		me, o.AssignedTo).Scan(&scope, &sameTeam)
	if err != nil {
		return fmt.Errorf("edit scope: %w", err)
	}
	switch {
	case scope == ScopeCompany:
		return nil
	case scope == ScopeTeam && (o.AssignedTo == nil || sameTeam):
		return nil
	}
	return errOutsideScope
}

// RequireWrite guards a route of one record (path {id}): owner loads the
// record's owner (a problem.NotFound error when it is absent, answered as
// such) and check (CheckWrite on the service's read model) decides before
// next runs, so a refused write never reads its body.
func RequireWrite(owner func(ctx context.Context, id int64) (Owner, error), check func(ctx context.Context, o Owner) error) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			id, err := httpx.PathID(r, "id")
			if err == nil {
				var o Owner
				if o, err = owner(r.Context(), id); err == nil {
					err = check(r.Context(), o)
				}
			}
			if err != nil {
				httpx.Error(w, r, err)
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}
