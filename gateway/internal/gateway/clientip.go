package gateway

import (
	"net/netip"
	"strings"
)

// clientIP finds the caller's address. X-Forwarded-For is believed only
// when the direct peer is a trusted proxy, and then read from the right,
// skipping trusted hops: the first untrusted address is the client. Taking
// the leftmost entry instead would let any client choose its own IP (and
// so its own rate-limit bucket).
func clientIP(remote netip.Addr, xff string, trusted []netip.Prefix) netip.Addr {
	remote = remote.Unmap()
	if !isTrusted(remote, trusted) || xff == "" {
		return remote
	}
	hops := strings.Split(xff, ",")
	client := remote
	for i := len(hops) - 1; i >= 0; i-- {
		a, err := netip.ParseAddr(strings.TrimSpace(hops[i]))
		if err != nil {
			return client
		}
		client = a.Unmap()
		if !isTrusted(client, trusted) {
			return client
		}
	}
	return client
}

func isTrusted(a netip.Addr, trusted []netip.Prefix) bool {
	for _, p := range trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}
