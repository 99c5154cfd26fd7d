package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"

	"github.com/opencrm/crm/pkg/contract/identityapi"
	"github.com/opencrm/crm/pkg/outbox"
	"github.com/opencrm/crm/pkg/testredis"
	"github.com/opencrm/crm/services/contracts/internal/contracts"
)

// TestOutboxRefusalRollsTheWriteBack: the events are written in the
// transaction of the change, so an outbox that refuses them (a constraint
// added for the test) fails every write path with a bare 500 and leaves
// the contract as it was.
func TestOutboxRefusalRollsTheWriteBack(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.deals.set(1, mergeFor(1, "Deal", "Acme"))
	tpl := e.createTemplate(t, nil)
	ids := map[string]int64{}
	for _, st := range []string{"draft", "active", "executed with copy"} {
		ids[st] = e.contractIn(t, tpl, st)
	}
	// state, without the body of a 404 download (its request id differs).
	stateOf := func(id int64) state {
		t.Helper()
		s := e.state(t, id)
		if s.Download != http.StatusOK {
			s.Bytes = nil
		}
		return s
	}
	before := map[string]state{}
	for st, id := range ids {
		before[st] = stateOf(id)
	}
	var count int
	count0 := func() int {
		t.Helper()
		if err := e.db.QueryRow(context.Background(), `SELECT count(*) FROM contracts`).Scan(&count); err != nil {
			t.Fatal(err)
		}
		return count
	}
	contractsBefore := count0()
	if _, err := e.db.Exec(context.Background(), `ALTER TABLE outbox ADD CONSTRAINT refuse_all CHECK (false) NOT VALID`); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name  string
		state string
		do    func() response
	}{
		{"create", "", func() response {
			return e.do(t, http.MethodPost, "/contracts", e.user, map[string]any{"deal_id": 1, "template_id": tpl, "title": "x"})
		}},
		{"PUT", "draft", func() response { return e.put(t, ids["draft"], map[string]any{"title": "Renamed", "status": "active"}) }},
		{"regenerate", "draft", func() response {
			return e.do(t, http.MethodPut, fmt.Sprintf("/contracts/%d/regenerate", ids["draft"]), e.user, nil)
		}},
		{"upload", "active", func() response { return e.uploadPDF(t, ids["active"], e.user, "s.pdf", pdfBytes("s")) }},
		{"delete the signed copy", "executed with copy", func() response {
			return e.do(t, http.MethodDelete, fmt.Sprintf("/contracts/%d/executed", ids["executed with copy"]), e.admin, nil)
		}},
		{"delete", "draft", func() response {
			return e.do(t, http.MethodDelete, fmt.Sprintf("/contracts/%d", ids["draft"]), e.user, nil)
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			wantProblem(t, tc.do(), http.StatusInternalServerError, "internal")
			if tc.state != "" {
				if diff := cmp.Diff(before[tc.state], stateOf(ids[tc.state])); diff != "" {
					t.Errorf("contract changed (-before +after):\n%s", diff)
				}
			}
			if n := count0(); n != contractsBefore {
				t.Errorf("%d contracts, want %d", n, contractsBefore)
			}
		})
	}
	t.Run("expiry", func(t *testing.T) {
		if _, err := e.svc.RunExpiry(context.Background(), contracts.Day(time.Now())); err == nil {
			t.Fatal("RunExpiry succeeded without its events")
		}
		if diff := cmp.Diff(before["active"], stateOf(ids["active"])); diff != "" {
			t.Errorf("due contract changed (-before +after):\n%s", diff)
		}
	})
}

// relayRedis is the Redis the relay test publishes to:
// CONTRACTS_TEST_REDIS_URL, else database 0 of the local server.
func relayRedis(t *testing.T) *redis.Client {
	t.Helper()
	return testredis.Client(t, "CONTRACTS_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")
}

// TestRelayPublishesContractEvents: the relay copies the outbox to
// crm:events:contracts, in order, as outbox.Events whose data is the
// contract. The stream may be shared (a stack on the same Redis), so the
// test reads only the entries of its own contract and removes them
// afterwards.
func TestRelayPublishesContractEvents(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t)
	e.deals.set(1, mergeFor(1, "Deal", "Acme"))
	tpl := e.createTemplate(t, nil)
	title := "Relay " + randHex(6)
	id := idOf(setStatus(t, e, e.createContract(t, 1, tpl, map[string]any{"title": title}), "active"))
	if r := e.uploadPDF(t, id, e.user, "signed.pdf", pdfBytes("signed")); r.status != http.StatusCreated {
		t.Fatalf("upload: %d %s", r.status, r.body)
	}
	// The template's audit entry (crm:audit, TestTemplateChangesAudited's
	// subject) is not published to the shared Redis by this test.
	if _, err := e.db.Exec(ctx, `DELETE FROM outbox WHERE stream = $1`, identityapi.AuditStream); err != nil {
		t.Fatal(err)
	}
	want := e.events(t, 0, 0)

	rdb := relayRedis(t)
	const stream = "crm:events:contracts"
	existed, err := rdb.Exists(ctx, stream).Result()
	if err != nil {
		t.Fatal(err)
	}
	start := "0-0"
	if last, err := rdb.XRevRangeN(ctx, stream, "+", "-", 1).Result(); err == nil && len(last) == 1 {
		start = last[0].ID
	}
	relay := &outbox.Relay{DB: e.db, Redis: rdb}
	n, err := relay.Once(ctx)
	if err != nil || n != len(want) {
		t.Fatalf("relay.Once = %d, %v; want %d", n, err, len(want))
	}
	msgs, err := rdb.XRange(ctx, stream, "("+start, "+").Result()
	if err != nil {
		t.Fatal(err)
	}
	var mine []string
	var got []event
	for _, m := range msgs {
		var ev outbox.Event
		if err := json.Unmarshal([]byte(m.Values["event"].(string)), &ev); err != nil {
			t.Fatalf("entry %s: %v", m.ID, err)
		}
		var data map[string]any
		if err := json.Unmarshal(ev.Data, &data); err != nil {
			t.Fatalf("entry %s data: %v", m.ID, err)
		}
		if data["title"] != title {
			continue // another producer's entry
		}
		mine = append(mine, m.ID)
		got = append(got, event{Type: ev.Type, Data: data})
	}
	t.Cleanup(func() {
		ctx := context.Background()
		if len(mine) > 0 {
			rdb.XDel(ctx, stream, mine...)
		}
		if n, _ := rdb.XLen(ctx, stream).Result(); existed == 0 && n == 0 {
			rdb.Del(ctx, stream)
		}
	})
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("published events (-outbox +stream):\n%s", diff)
	}
	var types []string
	for _, ev := range got {
		types = append(types, ev.Type)
	}
	wantTypes := []string{contracts.EventCreated, contracts.EventStatusChanged, contracts.EventStatusChanged, contracts.EventExecuted}
	if diff := cmp.Diff(wantTypes, types); diff != "" {
		t.Errorf("published types (-want +got):\n%s", diff)
	}
}
