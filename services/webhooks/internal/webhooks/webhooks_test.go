package webhooks

import "testing"

func TestParseEventID(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]int64{"evt_0": 0, "evt_42": 42, "evt_9223372036854775807": 1<<63 - 1} {
		if got, ok := ParseEventID(in); !ok || got != want {
			t.Errorf("ParseEventID(%q) = %d, %v", in, got, ok)
		}
	}
	for _, in := range []string{"", "evt_", "42", "evt_-1", "evt_+1", "evt_1x", "evt_99999999999999999999", "ping_1"} {
		if _, ok := ParseEventID(in); ok {
			t.Errorf("ParseEventID(%q) accepted", in)
		}
	}
}
