package outbox

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/opencrm/crm/pkg/tracing"
)

// encodeEvent writes what json.Marshal writes, whatever the data.
func TestEncodeEventMatchesMarshal(t *testing.T) {
	at := time.Date(2026, 11, 28, 1, 2, 3, 456789000, time.UTC)
	for _, data := range []string{`{"id":1,"name":"Ada"}`, `{"a":"x y","b":[1,2,{"c":null}]}`, `{"id": 1, "name": "Ada"}`,
		`{"s":"a<b"}`, `{"s":"a\u003cb"}`, `{"s":"tab\tin"}`, `{"s":"q\"uote\\"}`, "{\"s\":\"line\u2028sep\"}", `null`, `"x"`, `12`,
		`[ ]`, "{\n\"a\":1}", `{"a":"é"}`} {
		for _, trace := range []tracing.Carrier{nil, {}, {"traceparent": "00-abc-def-01", "tracestate": "a=<b>"}} {
			for _, typ := range []string{"contact.created", "a<b>&c"} {
				ev := Event{ID: 42, Type: typ, SchemaVersion: 1, AggregateID: "7", OccurredAt: at, Data: json.RawMessage(data), Trace: trace}
				got, err := encodeEvent(ev)
				want, werr := json.Marshal(ev)
				if err != nil || werr != nil || string(got) != string(want) {
					t.Errorf("encodeEvent(%s, %v, %s) = %s, %v; json.Marshal %s, %v", data, trace, typ, got, err, want, werr)
				}
			}
		}
	}
	bad := Event{ID: 1, Data: json.RawMessage(`{}`), OccurredAt: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}
	if _, err := encodeEvent(bad); err == nil {
		t.Error("an occurred_at json.Marshal refuses was encoded")
	}
}
