package api

import (
	"net/http/httptest"
	"testing"
)

func TestClientIP(t *testing.T) {
	t.Parallel()
	loopback, err := ParseTrustedProxies("")
	if err != nil {
		t.Fatal(err)
	}
	cluster, err := ParseTrustedProxies("10.0.0.0/8, 127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		c      *ClientIP
		remote string
		xff    []string
		want   string
	}{
		{"direct client", loopback, "198.51.100.9:1000", nil, "198.51.100.9"},
		{"untrusted peer's header ignored", loopback, "198.51.100.9:1000", []string{"1.2.3.4"}, "198.51.100.9"},
		{"trusted proxy", loopback, "127.0.0.1:1000", []string{"1.2.3.4"}, "1.2.3.4"},
		{"ipv6 loopback proxy", loopback, "[::1]:1000", []string{"2001:db8::1"}, "2001:db8::1"},
		{"forged left entry ignored", loopback, "127.0.0.1:1000", []string{"6.6.6.6, 1.2.3.4"}, "1.2.3.4"},
		{"trusted hops skipped", cluster, "10.1.2.3:1000", []string{"1.2.3.4, 10.9.9.9"}, "1.2.3.4"},
		{"several headers", cluster, "10.1.2.3:1000", []string{"6.6.6.6", "1.2.3.4"}, "1.2.3.4"},
		{"no header from proxy", loopback, "127.0.0.1:1000", nil, "127.0.0.1"},
		{"garbage header", loopback, "127.0.0.1:1000", []string{"not-an-ip"}, "127.0.0.1"},
		{"mapped ipv4", loopback, "[::ffff:198.51.100.9]:1000", nil, "198.51.100.9"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/", nil)
			r.RemoteAddr = tc.remote
			for _, h := range tc.xff {
				r.Header.Add("X-Forwarded-For", h)
			}
			if got := tc.c.Of(r); got != tc.want {
				t.Fatalf("Of = %q, want %q", got, tc.want)
			}
		})
	}
	for _, bad := range []string{"nope", "10.0.0.0/99", "1.2.3.4/8/1"} {
		if _, err := ParseTrustedProxies(bad); err == nil {
			t.Errorf("ParseTrustedProxies(%q) accepted", bad)
		}
	}
}
