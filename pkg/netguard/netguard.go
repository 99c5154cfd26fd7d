// Package netguard keeps outbound connections that a user chose the target
// of (webhook receivers, IMAP servers) away from the platform's own network:
// loopback, private ranges, link-local (the cloud metadata address) and
// every other range no public service lives in. It checks a URL when it is
// saved, and it checks again the address actually dialled, after DNS, so a
// name that resolves to a public address today and to 127.0.0.1 tomorrow
// still cannot reach inside.
package netguard

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"syscall"
)

// ErrRefused is a connection to an address that is not allowed.
var ErrRefused = errors.New("address not allowed")

// refusedPrefixes are the ranges no public service answers on. The IPv4
// ones are matched on the embedded address of IPv4-mapped, IPv4-compatible
// and NAT64 addresses too (see Refused).
var refusedPrefixes = func() []netip.Prefix {
	var ps []netip.Prefix
	for _, s := range []string{
		"0.0.0.0/8",       // "this network", incl. the unspecified address
		"10.0.0.0/8",      // private
		"100.64.0.0/10",   // carrier-grade NAT
		"127.0.0.0/8",     // loopback
		"169.254.0.0/16",  // link-local, incl. the metadata address 169.254.169.254
		"172.16.0.0/12",   // private
		"192.0.0.0/24",    // IETF protocol assignments
		"192.0.2.0/24",    // documentation
		"192.168.0.0/16",  // private
		"198.18.0.0/15",   // benchmarking
		"198.51.100.0/24", // documentation
		"203.0.113.0/24",  // documentation
		"224.0.0.0/4",     // multicast
		"240.0.0.0/4",     // reserved, incl. broadcast
		"::/128",          // unspecified
		"::1/128",         // loopback
		"fc00::/7",        // unique local, incl. fd00:ec2::254 (metadata)
		"fe80::/10",       // link-local
		"fec0::/10",       // deprecated site-local
		"ff00::/8",        // multicast
		"2001:db8::/32",   // documentation
		"100::/64",        // discard
	} {
		ps = append(ps, netip.MustParsePrefix(s))
	}
	return ps
}()

var (
	nat64      = netip.MustParsePrefix("64:ff9b::/96")
	nat64Local = netip.MustParsePrefix("64:ff9b:1::/48")
	v4compat   = netip.MustParsePrefix("::/96")
	sixToFour  = netip.MustParsePrefix("2002::/16")
)

// Refused reports whether a must not be connected to. An invalid address
// is refused. IPv6 addresses that carry an IPv4 address (mapped ::ffff:a.b.c.d,
// compatible ::a.b.c.d, NAT64 64:ff9b::a.b.c.d) are judged by that IPv4
// address, since that is where the packets end up; a 6to4 address
// (2002::/16) is refused when the IPv4 address it embeds is.
func Refused(a netip.Addr) bool {
	if !a.IsValid() {
		return true
	}
	a = a.WithZone("")
	if a.Is6() {
		b := a.As16()
		switch {
		case a.Is4In6():
			a = a.Unmap()
		case nat64.Contains(a) || (v4compat.Contains(a) && a != netip.IPv6Unspecified() && a != netip.IPv6Loopback()):
			a = netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]})
		case sixToFour.Contains(a):
			// 6to4 carries its relay's IPv4 address in bytes 2 to 5.
			if Refused(netip.AddrFrom4([4]byte{b[2], b[3], b[4], b[5]})) {
				return true
			}
		case nat64Local.Contains(a):
			return true
		}
	}
	for _, p := range refusedPrefixes {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// Exempt lists prefixes an operator allows although Refused names them: a
// receiver of their own on an internal network. Empty exempts nothing.
type Exempt []netip.Prefix

// Refused is the package's Refused unless a lies in one of e's prefixes.
func (e Exempt) Refused(a netip.Addr) bool {
	u := a.WithZone("").Unmap()
	for _, p := range e {
		if p.Contains(u) {
			return false
		}
	}
	return Refused(a)
}

// Control is the Control hook of a dialer that honours e.
func (e Exempt) Control(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil || e.Refused(ap.Addr()) {
		return ErrRefused
	}
	return nil
}

// ParseExempt reads a comma-separated list of CIDR prefixes (an address
// alone is a one-address prefix), as an operator writes it in a setting.
func ParseExempt(s string) (Exempt, error) {
	var out Exempt
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		if !strings.Contains(f, "/") {
			a, err := netip.ParseAddr(f)
			if err != nil {
				return nil, fmt.Errorf("%q is not an address or CIDR prefix", f)
			}
			out = append(out, netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()))
			continue
		}
		p, err := netip.ParsePrefix(f)
		if err != nil {
			return nil, fmt.Errorf("%q is not an address or CIDR prefix", f)
		}
		out = append(out, p.Masked())
	}
	return out, nil
}

// Control is a net.Dialer Control hook refusing (with ErrRefused) every
// address Refused names. It runs on the address actually dialled, after
// name resolution, so a DNS answer changed after a check cannot pass.
func Control(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil || Refused(ap.Addr()) {
		return ErrRefused
	}
	return nil
}
