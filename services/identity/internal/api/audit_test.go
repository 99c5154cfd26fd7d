package api_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/opencrm/crm/pkg/contract/identityapi"
	"github.com/opencrm/crm/pkg/outbox"
	"github.com/opencrm/crm/pkg/problem"
)

type auditPage struct {
	Success   bool                     `json:"success"`
	Data      []identityapi.AuditEntry `json:"data"`
	HasMore   bool                     `json:"has_more"`
	NextAfter *int64                   `json:"next_after"`
}

// auditLog reads GET /audit-log?query as the admin.
func (e *env) auditLog(query string) auditPage {
	e.t.Helper()
	var out auditPage
	decode(e.t, e.do(req{method: "GET", path: "/audit-log?" + query, token: e.admin}), http.StatusOK, &out)
	return out
}

func (e *env) verifyAudit() identityapi.AuditVerification {
	e.t.Helper()
	var out envelope[identityapi.AuditVerification]
	decode(e.t, e.do(req{method: "GET", path: "/audit-log/verify", token: e.admin}), http.StatusOK, &out)
	return out.Data
}

func actions(entries []identityapi.AuditEntry) []string {
	out := make([]string, len(entries))
	for i, en := range entries {
		out[i] = en.Action
	}
	return out
}

func details(t *testing.T, en identityapi.AuditEntry) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(en.Details, &m); err != nil {
		t.Fatalf("details %s: %v", en.Details, err)
	}
	return m
}

// TestAuditLogRecordsIdentityActions: each of identity's actions appends
// its entry, newest first, with who did it and what changed; the chain
// verifies.
func TestAuditLogRecordsIdentityActions(t *testing.T) {
	t.Parallel()
	e := newEnv(t, options{})
	u := e.createUser("Audit Target", uniqueEmail("audited"), "audit-password-1", "user", nil)
	team := e.do(req{method: "POST", path: "/teams", token: e.admin, body: `{"name":"Audit team"}`})
	var tm envelope[teamOut]
	decode(t, team, http.StatusCreated, &tm)
	decode(t, e.do(req{method: "PUT", path: "/users/" + id(u.ID), token: e.admin,
		body: mustJSON(map[string]any{"name": "Audit Target", "email": u.Email, "role": "admin", "edit_scope": "own", "team_id": tm.Data.ID})}), 200, nil)
	var key envelope[struct{ ID int64 }]
	decode(t, e.do(req{method: "POST", path: "/api-keys", token: e.admin, body: `{"name":"audit key"}`}), 201, &key)
	decode(t, e.do(req{method: "DELETE", path: "/api-keys/" + id(key.Data.ID), token: e.admin}), 200, nil)
	decode(t, e.do(req{method: "DELETE", path: "/api-keys/" + id(key.Data.ID), token: e.admin}), 200, nil) // again: no entry
	tok := e.createToken(`{"name":"audit token","scopes":["contacts:read"]}`)
	decode(t, e.do(req{method: "DELETE", path: "/access-tokens/" + id(tok.ID), token: e.admin}), 200, nil)
	decode(t, e.do(req{method: "DELETE", path: "/users/" + id(u.ID), token: e.admin}), 200, nil)
	decode(t, e.do(req{method: "DELETE", path: "/teams/" + id(tm.Data.ID), token: e.admin}), 200, nil)

	page := e.auditLog("per_page=100")
	want := []string{"team.deleted", "user.deactivated", "token.revoked", "token.created", "api_key.revoked", "api_key.created",
		"user.updated", "edit_scope.changed", "role.changed", "team.created", "user.created",
		"login.succeeded", "user.created"} // the bootstrap admin and its login
	if diff := cmp.Diff(want, actions(page.Data)); diff != "" {
		t.Fatalf("actions, newest first (-want +got):\n%s", diff)
	}
	adminActor := identityapi.AuditActor{Type: "user", ID: &e.adminID, Name: "Administrator"}
	role := page.Data[8]
	if diff := cmp.Diff(adminActor, role.Actor); diff != "" {
		t.Errorf("role.changed actor (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(&identityapi.AuditTarget{Object: "user", ID: id(u.ID)}, role.Target); diff != "" {
		t.Errorf("role.changed target (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]any{"changes": []any{map[string]any{"field": "role", "from": "user", "to": "admin"}}},
		details(t, role)); diff != "" {
		t.Errorf("role.changed details (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]any{"changes": []any{map[string]any{"field": "team_id", "from": nil, "to": float64(tm.Data.ID)}}},
		details(t, page.Data[6])); diff != "" {
		t.Errorf("user.updated details (-want +got):\n%s", diff)
	}
	if got := details(t, page.Data[0]); got["members_unassigned"] != float64(1) || got["name"] != "Audit team" {
		t.Errorf("team.deleted details %v", got)
	}
	if boot := page.Data[12]; boot.Actor.Type != "system" || boot.Context != "identity" {
		t.Errorf("bootstrap entry %+v, want the system's", boot)
	}
	if page.HasMore || page.NextAfter == nil || *page.NextAfter != page.Data[12].ID {
		t.Errorf("has_more %v next_after %v", page.HasMore, page.NextAfter)
	}

	// Filters and the cursor.
	if got := actions(e.auditLog("action=role.changed").Data); !cmp.Equal(got, []string{"role.changed"}) {
		t.Errorf("action filter: %v", got)
	}
	first := e.auditLog("per_page=5")
	next := e.auditLog("per_page=5&after=" + id(*first.NextAfter))
	if !first.HasMore || !cmp.Equal(actions(next.Data), want[5:10]) {
		t.Errorf("second page %v (has_more %v)", actions(next.Data), first.HasMore)
	}
	if got := e.auditLog("actor=" + id(e.adminID) + "&action=login.succeeded").Data; len(got) != 1 {
		t.Errorf("the admin's logins: %v", actions(got))
	}
	future := url.QueryEscape(time.Now().Add(time.Hour).Format(time.RFC3339))
	if got := e.auditLog("from=" + future).Data; len(got) != 0 {
		t.Errorf("entries from an hour ahead: %v", actions(got))
	}

	v := e.verifyAudit()
	if diff := cmp.Diff(identityapi.AuditVerification{OK: true, Checked: int64(len(want))}, v); diff != "" {
		t.Errorf("verify (-want +got):\n%s", diff)
	}
}

// TestAuditLogLogins: a failed login is recorded with the address and
// user agent identity saw (a trusted proxy's X-Forwarded-For believed), the
// account tried and why; a success as the user's; a logout and a reused
// refresh token as session revocations.
func TestAuditLogLogins(t *testing.T) {
	t.Parallel()
	e := newEnv(t, options{})
	email := uniqueEmail("login")
	u := e.createUser("Login Target", email, "login-password-1", "user", nil)
	ua := map[string]string{"User-Agent": "audit-test/1.0", "X-Forwarded-For": "198.51.100.9"}
	login := func(email, pw string) int {
		rec := e.do(req{method: "POST", path: "/auth/login", header: ua, remote: "127.0.0.1:5000",
			body: mustJSON(map[string]string{"email": email, "password": pw})})
		return rec.Code
	}
	if c := login(email, "wrong-password-1"); c != http.StatusUnauthorized {
		t.Fatalf("wrong password: %d", c)
	}
	if c := login("nobody-"+email, "wrong-password-1"); c != http.StatusUnauthorized {
		t.Fatalf("unknown email: %d", c)
	}
	page := e.auditLog("action=login.failed")
	ignore := cmpopts.IgnoreFields(identityapi.AuditEntry{}, "ID", "At", "Details", "RequestID", "PrevHash", "Hash")
	want := []identityapi.AuditEntry{
		{Actor: identityapi.AuditActor{Type: "anonymous"}, Action: "login.failed",
			IP: "198.51.100.9", UserAgent: "audit-test/1.0", Context: "identity"},
		{Actor: identityapi.AuditActor{Type: "anonymous"}, Action: "login.failed", Target: &identityapi.AuditTarget{Object: "user", ID: id(u.ID)},
			IP: "198.51.100.9", UserAgent: "audit-test/1.0", Context: "identity"},
	}
	if diff := cmp.Diff(want, page.Data, ignore); diff != "" {
		t.Fatalf("failed logins (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]any{"email": "nobody-" + email, "reason": "unknown_account"}, details(t, page.Data[0])); diff != "" {
		t.Errorf("unknown email details (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]any{"email": email, "reason": "wrong_password"}, details(t, page.Data[1])); diff != "" {
		t.Errorf("wrong password details (-want +got):\n%s", diff)
	}

	s := e.login(email, "login-password-1")
	ok := e.auditLog("action=login.succeeded&actor=" + id(u.ID)).Data
	if len(ok) != 1 || ok[0].IP != testIP || ok[0].Actor.Name != "Login Target" {
		t.Fatalf("login.succeeded: %+v", ok)
	}
	family := details(t, ok[0])["family"]

	// Rotate once, then present the spent token again: the family is
	// revoked as stolen.
	var next envelope[sessionOut]
	decode(t, e.refresh(s.RefreshToken), http.StatusOK, &next)
	wantProblem(t, e.refresh(s.RefreshToken), http.StatusUnauthorized, "unauthenticated")
	second := e.login(email, "login-password-1")
	decode(t, e.do(req{method: "POST", path: "/auth/logout", body: mustJSON(map[string]string{"refresh_token": second.RefreshToken})}), 200, nil)
	revoked := e.auditLog("action=session.revoked").Data
	if len(revoked) != 2 {
		t.Fatalf("session.revoked entries: %+v", revoked)
	}
	if d := details(t, revoked[1]); d["reason"] != "reuse" || d["family"] != family || revoked[1].Actor.Type != "anonymous" {
		t.Errorf("reuse entry %+v %v", revoked[1], d)
	}
	if d := details(t, revoked[0]); d["reason"] != "logout" || revoked[0].Actor.ID == nil || *revoked[0].Actor.ID != u.ID {
		t.Errorf("logout entry %+v %v", revoked[0], d)
	}
	if v := e.verifyAudit(); !v.OK {
		t.Errorf("verify: %+v", v)
	}
}

// TestAuditLogAppendOnly: the table refuses UPDATE, DELETE and TRUNCATE
// to the service's own connection, whatever its privileges.
func TestAuditLogAppendOnly(t *testing.T) {
	t.Parallel()
	e := newEnv(t, options{})
	ctx := context.Background()
	for _, sql := range []string{
		`UPDATE audit_log SET action = 'login.succeeded'`,
		`DELETE FROM audit_log WHERE id = 1`,
		`TRUNCATE audit_log`,
	} {
		_, err := e.db.Exec(ctx, sql)
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != "42501" {
			t.Errorf("%s: %v, want insufficient_privilege (42501)", sql, err)
		}
	}
	if v := e.verifyAudit(); !v.OK || v.Checked != 2 {
		t.Errorf("verify after the refused changes: %+v", v)
	}
}

// TestAuditLogVerifyNamesTamperedEntry: an entry altered in PostgreSQL
// directly (as the superuser, with the triggers bypassed) is named by
// verify; so is the entry after one deleted, and a missing tail.
func TestAuditLogVerifyNamesTamperedEntry(t *testing.T) {
	t.Parallel()
	e := newEnv(t, options{})
	for i := range 4 {
		e.createUser("Tamper", uniqueEmail("tamper"+id(int64(i))), "tamper-password-1", "user", nil)
	}
	page := e.auditLog("")
	if len(page.Data) != 6 {
		t.Fatalf("entries: %v", actions(page.Data))
	}
	tamper := func(sql string, args ...any) {
		t.Helper()
		err := e.db.InTx(context.Background(), func(tx pgx.Tx) error {
			if _, err := tx.Exec(context.Background(), `SET LOCAL session_replication_role = replica`); err != nil {
				return err
			}
			_, err := tx.Exec(context.Background(), sql, args...)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	ptr := func(n int64) *int64 { return &n }
	tamper(`UPDATE audit_log SET details = jsonb_set(details, '{email}', '"someone@else.example"') WHERE id = 4`)
	if diff := cmp.Diff(identityapi.AuditVerification{Checked: 4, FirstBroken: ptr(4), Reason: "hash"}, e.verifyAudit()); diff != "" {
		t.Errorf("altered details (-want +got):\n%s", diff)
	}
	tamper(`DELETE FROM audit_log WHERE id >= 4`)
	if diff := cmp.Diff(identityapi.AuditVerification{Checked: 3, FirstBroken: ptr(4), Reason: "missing"}, e.verifyAudit()); diff != "" {
		t.Errorf("missing tail (-want +got):\n%s", diff)
	}
	tamper(`DELETE FROM audit_log WHERE id = 2`)
	if diff := cmp.Diff(identityapi.AuditVerification{Checked: 2, FirstBroken: ptr(3), Reason: "missing"}, e.verifyAudit()); diff != "" {
		t.Errorf("entry deleted (-want +got):\n%s", diff)
	}
}

// TestAuditConsumerAppendsOnce: another context's entry delivered twice,
// in one read and again in a later one, is appended once.
func TestAuditConsumerAppendsOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t, options{})
	uid := int64(77)
	msg := identityapi.AuditMessage{Context: "contacts", Source: "6f0e4c1e-0000-4000-8000-000000000001",
		At: time.Date(2025, 3, 1, 12, 0, 0, 123456000, time.UTC), Actor: identityapi.AuditActor{Type: "user", ID: &uid, Name: "Ann"},
		Action: identityapi.AuditExportRan, Target: &identityapi.AuditTarget{Object: "contact"},
		Details: json.RawMessage(`{"rows": 12, "filters": {"status": "active"}}`), RequestID: "req-1"}
	data, err := json.Marshal(msg)
	if err != nil {
		t.Fatal(err)
	}
	ev := outbox.Event{ID: 5, Type: identityapi.AuditEventType, AggregateID: msg.Source, Data: data}
	ctx := context.Background()
	for range 2 {
		if err := e.svc.AppendAudit(ctx, []outbox.Event{ev, ev}); err != nil {
			t.Fatal(err)
		}
	}
	got := e.auditLog("action=export.ran&actor=77").Data
	want := []identityapi.AuditEntry{{Actor: msg.Actor, Action: "export.ran", Target: msg.Target,
		Details: json.RawMessage(`{"rows":12,"filters":{"status":"active"}}`), RequestID: "req-1", Context: "contacts"}}
	if diff := cmp.Diff(want, got, cmpopts.IgnoreFields(identityapi.AuditEntry{}, "ID", "At", "PrevHash", "Hash")); diff != "" {
		t.Fatalf("appended (-want +got):\n%s", diff)
	}
	if !got[0].At.Equal(msg.At) {
		t.Errorf("at %v, want the producer's %v", got[0].At, msg.At)
	}
	if v := e.verifyAudit(); !v.OK || v.Checked != 3 {
		t.Errorf("verify: %+v", v)
	}
}

// TestAuditLogBadInput: a person without the admin role is refused, and
// each malformed parameter is a 422 naming it.
func TestAuditLogBadInput(t *testing.T) {
	t.Parallel()
	e := newEnv(t, options{})
	email := uniqueEmail("plain")
	e.createUser("Plain User", email, "plain-password-1", "user", nil)
	user := e.login(email, "plain-password-1").AccessToken
	ignore := cmpopts.IgnoreFields(problem.Body{}, "RequestID")
	for _, path := range []string{"/audit-log", "/audit-log/verify"} {
		rec := e.do(req{method: "GET", path: path, token: user})
		got := wantProblem(t, rec, http.StatusForbidden, "forbidden")
		want := problem.Body{Type: "/docs/problems#forbidden", Title: "Forbidden", Status: 403, Code: "forbidden",
			Detail: "this action requires the admin role"}
		if diff := cmp.Diff(want, got, ignore); diff != "" {
			t.Errorf("%s as a user (-want +got):\n%s", path, diff)
		}
	}
	invalid := func(field, msg string) problem.Body {
		return problem.Body{Type: "/docs/problems#validation_failed", Title: "Unprocessable Entity", Status: 422,
			Code: "validation_failed", Detail: "one or more fields are invalid",
			Errors: []problem.FieldError{{Field: field, Message: msg}}}
	}
	for _, tt := range []struct {
		query string
		want  problem.Body
	}{
		{"after=abc", invalid("after", "must be an entry id (the next_after of a page)")},
		{"after=0", invalid("after", "must be an entry id (the next_after of a page)")},
		{"per_page=0", invalid("per_page", "must be an integer between 1 and 100")},
		{"per_page=101", invalid("per_page", "must be an integer between 1 and 100")},
		{"action=user.exploded", invalid("action", "must be one of the audit actions (login.succeeded, login.failed, ...; see the API reference)")},
		{"from=2025-02-01T00:00:00Z&to=2025-01-01T00:00:00Z", invalid("from", "must not be after to")},
		{"to=yesterday", invalid("to", "must be an RFC 3339 time such as 2024-05-01T00:00:00Z")},
		{"actor=me", invalid("actor", "must be a user id (a positive integer)")},
	} {
		t.Run(tt.query, func(t *testing.T) {
			rec := e.do(req{method: "GET", path: "/audit-log?" + tt.query, token: e.admin})
			got := wantProblem(t, rec, http.StatusUnprocessableEntity, "validation_failed", tt.want.Errors[0].Field)
			if diff := cmp.Diff(tt.want, got, ignore); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
