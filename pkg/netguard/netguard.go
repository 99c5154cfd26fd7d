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

// The addresses refused follow IANA's IPv4 and IPv6 Special-Purpose
// Address Registries: every block there is refused, the few marked
// globally reachable included (AS112 DNS sinks, AMT relays, PCP and TURN
// anycast, ORCHID and drone identifiers), since those are network
// infrastructure or identifiers and no webhook receiver or mail server
// lives in them. Multicast, which has a registry of its own, is refused
// too. The registries change rarely; the tests list their rows.

// refused4 are the refused IPv4 blocks, also matched on the IPv4 address
// an IPv4-mapped, NAT64 or 6to4 address carries (see Refused).
var refused4 = prefixes(
	"0.0.0.0/8",       // "this network", incl. the unspecified address
	"10.0.0.0/8",      // private
	"100.64.0.0/10",   // shared address space (carrier-grade NAT)
	"127.0.0.0/8",     // loopback
	"169.254.0.0/16",  // link-local, incl. the metadata address 169.254.169.254
	"172.16.0.0/12",   // private
	"192.0.0.0/24",    // IETF protocol assignments
	"192.0.2.0/24",    // documentation
	"192.31.196.0/24", // AS112
	"192.52.193.0/24", // AMT
	"192.88.99.0/24",  // deprecated 6to4 relay anycast
	"192.168.0.0/16",  // private
	"192.175.48.0/24", // AS112 direct delegation
	"198.18.0.0/15",   // benchmarking
	"198.51.100.0/24", // documentation
	"203.0.113.0/24",  // documentation
	"224.0.0.0/4",     // multicast
	"240.0.0.0/4",     // reserved, incl. limited broadcast
)

// refused6 are the refused blocks inside global unicast (2000::/3); an
// IPv6 address outside it is refused unless it carries an IPv4 address
// (see Refused).
var refused6 = prefixes(
	"2001::/23",         // IETF protocol assignments, incl. Teredo 2001::/32
	"2001:db8::/32",     // documentation
	"2620:4f:8000::/48", // AS112 direct delegation
	"3fff::/20",         // documentation
)

var (
	globalUnicast = netip.MustParsePrefix("2000::/3")
	nat64         = netip.MustParsePrefix("64:ff9b::/96")
	sixToFour     = netip.MustParsePrefix("2002::/16")
)

func prefixes(ss ...string) []netip.Prefix {
	ps := make([]netip.Prefix, len(ss))
	for i, s := range ss {
		ps[i] = netip.MustParsePrefix(s)
	}
	return ps
}

func inAny(ps []netip.Prefix, a netip.Addr) bool {
	for _, p := range ps {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// Refused reports whether a must not be connected to. An invalid address
// is refused.
//
// IPv6 is judged by what it is allowed to be rather than by what it must
// not be: only global unicast (2000::/3) outside refused6 passes, so
// everything else, named in a registry or not (loopback, unspecified,
// IPv4-compatible ::a.b.c.d, IPv4-translated ::ffff:0:a.b.c.d, the local
// NAT64 prefix 64:ff9b:1::/48, discard and dummy prefixes, SRv6 SIDs,
// unique local, link-local, site-local, multicast), is refused. Two
// forms outside 2000::/3 carry an IPv4 address that is where the packets
// end up, and are judged by it: IPv4-mapped ::ffff:a.b.c.d and the
// well-known NAT64 prefix 64:ff9b::a.b.c.d. A 6to4 address (2002::/16)
// is refused when the IPv4 address of the site it embeds is.
func Refused(a netip.Addr) bool {
	if !a.IsValid() {
		return true
	}
	a = a.WithZone("").Unmap()
	if a.Is4() {
		return inAny(refused4, a)
	}
	b := a.As16()
	switch {
	case nat64.Contains(a):
		return inAny(refused4, netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]}))
	case !globalUnicast.Contains(a):
		return true
	case sixToFour.Contains(a) && inAny(refused4, netip.AddrFrom4([4]byte{b[2], b[3], b[4], b[5]})):
		return true
	}
	return inAny(refused6, a)
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
