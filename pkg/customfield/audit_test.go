package customfield_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/jackc/pgx/v5"

	"github.com/opencrm/crm/pkg/auth"
	"github.com/opencrm/crm/pkg/contract/identityapi"
	"github.com/opencrm/crm/pkg/contract/propertyapi"
	"github.com/opencrm/crm/pkg/patch"
	"github.com/opencrm/crm/pkg/problem"
)

// TestDefinitionChangesAreAudited: creating, changing and deleting a
// definition each write their audit entry, in the change's transaction,
// on the audit stream (not the context's event stream, which feeds the
// webhooks), as the caller's, with what changed.
func TestDefinitionChangesAreAudited(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := auth.WithClaims(context.Background(), &auth.Claims{Role: auth.RoleAdmin, Name: "Ann Admin"})
	ctx = problem.WithRequestID(ctx, "req-cf-1")
	if _, err := s.Create(ctx, things, propertyapi.PropertyInput{Name: "tier", Label: "Tier", Type: "text"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Update(ctx, things, "tier", propertyapi.PropertyUpdate{Label: patch.Of("Level"), Required: patch.Of(true)}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.DB.Exec(ctx, `INSERT INTO things (custom_fields) VALUES ('{"tier":"gold"}'), ('{}')`); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, things, "tier"); err != nil {
		t.Fatal(err)
	}
	// A refused change records nothing.
	if _, err := s.Create(ctx, things, propertyapi.PropertyInput{Name: "Bad Name", Label: "x", Type: "text"}); err == nil {
		t.Fatal("a bad name was accepted")
	}

	rows, err := s.DB.Query(ctx, `SELECT type, aggregate_id, payload::text FROM outbox WHERE stream = $1 ORDER BY id`,
		identityapi.AuditStream)
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		Type, Aggregate, Payload string
	}
	got, err := pgx.CollectRows(rows, pgx.RowToStructByPos[row])
	if err != nil {
		t.Fatal(err)
	}
	var msgs []identityapi.AuditMessage
	for _, r := range got {
		var m identityapi.AuditMessage
		if err := json.Unmarshal([]byte(r.Payload), &m); err != nil {
			t.Fatal(err)
		}
		if r.Type != identityapi.AuditEventType || r.Aggregate != m.Source || m.Source == "" || m.At.IsZero() {
			t.Errorf("outbox row %+v", r)
		}
		msgs = append(msgs, m)
	}
	target := &identityapi.AuditTarget{Object: "custom_field", ID: "contacts.tier"}
	actor := identityapi.AuditActor{Type: "user", Name: "Ann Admin"}
	want := []identityapi.AuditMessage{
		{Context: "contacts", Actor: actor, Action: "custom_field.created", Target: target, RequestID: "req-cf-1",
			Details: json.RawMessage(`{"label":"Tier","name":"tier","object":"contacts","options":[],"required":false,"type":"text","unique":false}`)},
		{Context: "contacts", Actor: actor, Action: "custom_field.updated", Target: target, RequestID: "req-cf-1",
			Details: json.RawMessage(`{"changes":[{"field":"label","from":"Tier","to":"Level"},{"field":"required","from":false,"to":true}],"name":"tier","object":"contacts"}`)},
		{Context: "contacts", Actor: actor, Action: "custom_field.deleted", Target: target, RequestID: "req-cf-1",
			Details: json.RawMessage(`{"label":"Level","name":"tier","object":"contacts","type":"text","values_removed":1}`)},
	}
	if diff := cmp.Diff(want, msgs, cmpopts.IgnoreFields(identityapi.AuditMessage{}, "Source", "At")); diff != "" {
		t.Errorf("audit messages (-want +got):\n%s", diff)
	}
	var onEvents int
	if err := s.DB.QueryRow(ctx, `SELECT count(*) FROM outbox WHERE stream = $1 AND type = $2`, s.Stream,
		identityapi.AuditEventType).Scan(&onEvents); err != nil || onEvents != 0 {
		t.Errorf("%d audit entries on the event stream (%v)", onEvents, err)
	}
}
