package api_test

import (
	"context"
	"encoding/json"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/opencrm/crm/pkg/outbox"
)

// TestSchemaVersionServed: the events feed and every delivery carry
// schema_version (docs/releasing.md): the version the stream event came with, 1
// for an event relayed before versions, 1 for a ping.
func TestSchemaVersionServed(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	rc := newReceiver(t, nil)
	e.create(rc.url(), "lead.updated")
	for i, v := range []int{0, 1, 2} {
		err := e.ingest.Handler("leads")(context.Background(), outbox.Event{ID: int64(100 + i), Type: "lead.updated",
			SchemaVersion: v, AggregateID: "9", OccurredAt: time.Now(), Data: json.RawMessage(`{"id":9}`)})
		if err != nil {
			t.Fatal(err)
		}
	}
	type shape struct {
		Keys    []string
		Version any
	}
	of := func(t *testing.T, raw []byte) shape {
		t.Helper()
		var m map[string]any
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatal(err)
		}
		var keys []string
		for _, k := range []string{"id", "type", "schema_version", "created_at", "data"} {
			if _, ok := m[k]; ok {
				keys = append(keys, k)
			}
		}
		if len(keys) != len(m) {
			t.Errorf("unexpected fields in %s", raw)
		}
		return shape{keys, m["schema_version"]}
	}
	all := []string{"id", "type", "schema_version", "created_at", "data"}
	want := []shape{{all, 1.0}, {all, 1.0}, {all, 2.0}}

	r := e.do("GET", "/events", e.admin, nil)
	var feed struct {
		Data []json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(r.body, &feed); err != nil {
		t.Fatalf("feed %d %s", r.status, r.body)
	}
	var got []shape
	for _, ev := range feed.Data {
		got = append(got, of(t, ev))
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("feed events (-want +got):\n%s", diff)
	}

	eventually(t, "three deliveries", func() bool { return rc.count() == 3 })
	got = nil
	byID := map[string]shape{}
	for _, hit := range rc.got() {
		byID[hit.header.Get("webhook-id")] = of(t, hit.body)
	}
	for _, id := range []string{"evt_1", "evt_2", "evt_3"} {
		got = append(got, byID[id])
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("delivered events (-want +got):\n%s", diff)
	}

	ping := newReceiver(t, nil)
	p := e.create(ping.url(), "deal.created")
	if r := e.do("POST", "/webhooks/"+strconv.FormatInt(p.ID, 10)+"/test", e.admin, nil); r.status != 200 {
		t.Fatalf("test: %d %s", r.status, r.body)
	}
	if diff := cmp.Diff(shape{all, 1.0}, of(t, ping.got()[0].body)); diff != "" {
		t.Errorf("ping (-want +got):\n%s", diff)
	}
}
