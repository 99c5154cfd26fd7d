package api

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// ClientIP finds the address a request came from, for login throttling.
// X-Forwarded-For is believed only when the direct peer is a trusted proxy
// (the gateway); then the chain is read from the right, skipping trusted
// hops, so a client cannot pick its own address by sending a forged
// header through a proxy that appends to it.
type ClientIP struct {
	trusted []netip.Prefix
}

// ParseTrustedProxies reads a comma-separated list of IPs or CIDRs;
// "" means loopback only.
func ParseTrustedProxies(s string) (*ClientIP, error) {
	if strings.TrimSpace(s) == "" {
		s = "127.0.0.0/8,::1/128"
	}
	c := &ClientIP{}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		if !strings.Contains(part, "/") {
			a, err := netip.ParseAddr(part)
			if err != nil {
				return nil, fmt.Errorf("invalid proxy address %q", part)
			}
			part = netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()).String()
		}
		p, err := netip.ParsePrefix(part)
		if err != nil {
			return nil, fmt.Errorf("invalid proxy range %q", part)
		}
		c.trusted = append(c.trusted, p.Masked())
	}
	return c, nil
}

func (c *ClientIP) isTrusted(a netip.Addr) bool {
	a = a.Unmap()
	for _, p := range c.trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// Of returns the client address of r as a string.
func (c *ClientIP) Of(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	peer, err := netip.ParseAddr(host)
	if err != nil {
		return host
	}
	peer = peer.Unmap()
	if !c.isTrusted(peer) {
		return peer.String()
	}
	var hops []string
	for _, h := range r.Header.Values("X-Forwarded-For") {
		hops = append(hops, strings.Split(h, ",")...)
	}
	client := peer
	for i := len(hops) - 1; i >= 0; i-- {
		a, err := netip.ParseAddr(strings.TrimSpace(hops[i]))
		if err != nil {
			break
		}
		client = a.Unmap()
		if !c.isTrusted(client) {
			break
		}
	}
	return client.String()
}
