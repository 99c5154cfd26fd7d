package api_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/opencrm/crm/pkg/contract/identityapi"
	"github.com/opencrm/crm/pkg/outbox"
)

// TestAuditConsumerIgnoresUnknown: the audit stream as a newer release
// may fill it: an entry with fields this release does not know (in the
// message and in the entry) is appended as it knows it, and an event of
// another type is ignored, in the same read, without an error (so the
// read is acknowledged, never retried in a loop).
func TestAuditConsumerIgnoresUnknown(t *testing.T) {
	t.Parallel()
	e := newEnv(t, options{})
	var evs []outbox.Event
	for _, body := range []string{
		`{"id":8,"type":"audit.entry","schema_version":1,"aggregate_id":"6f0e4c1e-0000-4000-8000-0000000000aa","occurred_at":"2026-11-28T10:00:00Z","shard":"eu",
			"data":{"context":"deals","source":"6f0e4c1e-0000-4000-8000-0000000000aa","at":"2026-11-28T10:00:00Z",
				"actor":{"type":"user","id":91,"name":"Uma","team":"Sales"},"action":"export.ran","target":{"object":"deal"},
				"details":{"rows":3},"request_id":"req-u1","risk":"low"}}`,
		`{"id":9,"type":"audit.summary","schema_version":1,"aggregate_id":"x","occurred_at":"2026-11-28T10:00:01Z",
			"data":{"action":"export.ran","context":"deals","actor":{"type":"user","id":91,"name":"Uma"}}}`,
	} {
		var ev outbox.Event
		if err := json.Unmarshal([]byte(body), &ev); err != nil {
			t.Fatal(err)
		}
		evs = append(evs, ev)
	}
	if err := e.svc.AppendAudit(context.Background(), evs); err != nil {
		t.Fatal(err)
	}
	uid := int64(91)
	got := e.auditLog("actor=91").Data
	want := []identityapi.AuditEntry{{Actor: identityapi.AuditActor{Type: "user", ID: &uid, Name: "Uma"}, Action: "export.ran",
		Target: &identityapi.AuditTarget{Object: "deal"}, Details: json.RawMessage(`{"rows":3}`), RequestID: "req-u1", Context: "deals"}}
	if diff := cmp.Diff(want, got, cmpopts.IgnoreFields(identityapi.AuditEntry{}, "ID", "At", "PrevHash", "Hash")); diff != "" {
		t.Errorf("appended (-want +got):\n%s", diff)
	}
}
