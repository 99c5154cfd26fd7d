package e2e

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

// TestAuditLogOutOfIdentitysReach: once deploy/postgres/harden.sql has run
// (the stack runs it as the crm-db-harden Job does), the role identity logs
// in as can still append to the audit log and read it, but can neither
// rewrite nor delete an entry, nor switch the append-only triggers off,
// nor grant itself the privileges back, nor replace the trigger function.
func TestAuditLogOutOfIdentitysReach(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	adm := admin(t) // a login: identity appends an entry as crm_identity

	conn, err := pgx.Connect(ctx, stack.roleURL("identity"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var owner string
	if err := conn.QueryRow(ctx, `SELECT tableowner FROM pg_tables WHERE schemaname = 'identity' AND tablename = 'audit_log'`).Scan(&owner); err != nil || owner != "crm_audit_owner" {
		t.Fatalf("audit_log owner %q, %v; want crm_audit_owner", owner, err)
	}
	// A GRANT by a role that is not the owner grants nothing (PostgreSQL
	// only warns): the statements below are refused after it all the same.
	if _, err := conn.Exec(ctx, `GRANT UPDATE, DELETE, TRUNCATE ON identity.audit_log TO crm_identity`); err != nil {
		t.Logf("grant: %v", err)
	}
	for _, tc := range []struct{ name, sql, want string }{
		{"update", `UPDATE identity.audit_log SET action = 'x'`, "permission denied"},
		{"delete", `DELETE FROM identity.audit_log`, "permission denied"},
		{"truncate", `TRUNCATE identity.audit_log`, "permission denied"},
		{"disable triggers", `ALTER TABLE identity.audit_log DISABLE TRIGGER ALL`, "must be owner"},
		{"replace the trigger function", `CREATE OR REPLACE FUNCTION identity.audit_log_refuse() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NULL; END $$`, "must be owner"},
	} {
		_, err := conn.Exec(ctx, tc.sql)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s as crm_identity: %v, want an error containing %q", tc.name, err, tc.want)
		}
	}

	// Identity still appends and the chain still verifies.
	page := must(t, http.StatusOK)(adm.Do("GET", "/audit-log?action=login.succeeded", nil))
	if list, _ := page.JSON["data"].([]any); len(list) == 0 {
		t.Errorf("no login entry after hardening: %s", page)
	}
	v := must(t, http.StatusOK)(adm.Do("GET", "/audit-log/verify", nil))
	if v.Data()["ok"] != true {
		t.Errorf("verify after hardening: %s", v)
	}
}
