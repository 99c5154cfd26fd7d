package netguard_test

import (
	"context"
	"errors"
	"net/netip"
	"slices"
	"testing"

	"github.com/opencrm/crm/pkg/netguard"
)

// block is one row of IANA's IPv4 or IPv6 Special-Purpose Address
// Registry (or of the address architecture, for the blocks those
// registries leave out), with its "Globally Reachable" column: True,
// False or N/A ("" for rows outside the special-purpose registries).
// carries names how to find the IPv4 address an IPv6 block carries, for
// the blocks judged by it; every other block is refused whole, the rows
// marked globally reachable included (see netguard's package notes).
type block struct {
	prefix, name, rfc, global string
	carries                   func(netip.Addr) netip.Addr
}

// last32 is the IPv4 address in the last 32 bits (mapped, NAT64).
func last32(a netip.Addr) netip.Addr {
	b := a.As16()
	return netip.AddrFrom4([4]byte(b[12:16]))
}

// sixToFourSite is the IPv4 address of a 6to4 site (bits 16 to 47).
func sixToFourSite(a netip.Addr) netip.Addr {
	b := a.As16()
	return netip.AddrFrom4([4]byte(b[2:6]))
}

var ipv4Registry = []block{
	{"0.0.0.0/8", `"This network"`, "RFC 791 §3.2", "False", nil},
	{"0.0.0.0/32", `"This host on this network"`, "RFC 1122 §3.2.1.3", "False", nil},
	{"10.0.0.0/8", "Private-Use", "RFC 1918", "False", nil},
	{"100.64.0.0/10", "Shared Address Space", "RFC 6598", "False", nil},
	{"127.0.0.0/8", "Loopback", "RFC 1122 §3.2.1.3", "False", nil},
	{"169.254.0.0/16", "Link Local", "RFC 3927", "False", nil},
	{"172.16.0.0/12", "Private-Use", "RFC 1918", "False", nil},
	{"192.0.0.0/24", "IETF Protocol Assignments", "RFC 6890 §2.1", "False", nil},
	{"192.0.0.0/29", "IPv4 Service Continuity Prefix", "RFC 7335", "False", nil},
	{"192.0.0.8/32", "IPv4 dummy address", "RFC 7600", "False", nil},
	{"192.0.0.9/32", "Port Control Protocol Anycast", "RFC 7723", "True", nil},
	{"192.0.0.10/32", "Traversal Using Relays around NAT Anycast", "RFC 8155", "True", nil},
	{"192.0.0.170/32", "NAT64/DNS64 Discovery", "RFC 8880, RFC 7050 §2.2", "False", nil},
	{"192.0.0.171/32", "NAT64/DNS64 Discovery", "RFC 8880, RFC 7050 §2.2", "False", nil},
	{"192.0.2.0/24", "Documentation (TEST-NET-1)", "RFC 5737", "False", nil},
	{"192.31.196.0/24", "AS112-v4", "RFC 7535", "True", nil},
	{"192.52.193.0/24", "AMT", "RFC 7450", "True", nil},
	{"192.88.99.0/24", "Deprecated (6to4 Relay Anycast)", "RFC 7526", "N/A", nil},
	{"192.88.99.2/32", "6a44-relay anycast address", "RFC 6751", "False", nil},
	{"192.168.0.0/16", "Private-Use", "RFC 1918", "False", nil},
	{"192.175.48.0/24", "Direct Delegation AS112 Service", "RFC 7534", "True", nil},
	{"198.18.0.0/15", "Benchmarking", "RFC 2544", "False", nil},
	{"198.51.100.0/24", "Documentation (TEST-NET-2)", "RFC 5737", "False", nil},
	{"203.0.113.0/24", "Documentation (TEST-NET-3)", "RFC 5737", "False", nil},
	{"240.0.0.0/4", "Reserved", "RFC 1112 §4", "False", nil},
	{"255.255.255.255/32", "Limited Broadcast", "RFC 8190, RFC 919 §7", "False", nil},
	// Not in the special-purpose registry (multicast has its own).
	{"224.0.0.0/4", "Multicast", "RFC 5771", "", nil},
}

var ipv6Registry = []block{
	{"::1/128", "Loopback Address", "RFC 4291", "False", nil},
	{"::/128", "Unspecified Address", "RFC 4291", "False", nil},
	{"::ffff:0:0/96", "IPv4-mapped Address", "RFC 4291", "False", last32},
	{"64:ff9b::/96", "IPv4-IPv6 Translat.", "RFC 6052", "True", last32},
	{"64:ff9b:1::/48", "IPv4-IPv6 Translat. (local use)", "RFC 8215", "False", nil},
	{"100::/64", "Discard-Only Address Block", "RFC 6666", "False", nil},
	{"100:0:0:1::/64", "Dummy IPv6 Prefix", "RFC 9780", "False", nil},
	{"2001::/23", "IETF Protocol Assignments", "RFC 2928", "False", nil},
	{"2001::/32", "TEREDO", "RFC 4380, RFC 8190", "N/A", nil},
	{"2001:1::1/128", "Port Control Protocol Anycast", "RFC 7723", "True", nil},
	{"2001:1::2/128", "Traversal Using Relays around NAT Anycast", "RFC 8155", "True", nil},
	{"2001:1::3/128", "DNS-SD Service Registration Protocol Anycast", "RFC 9665", "True", nil},
	{"2001:2::/48", "Benchmarking", "RFC 5180, RFC Errata 1752", "False", nil},
	{"2001:3::/32", "AMT", "RFC 7450", "True", nil},
	{"2001:4:112::/48", "AS112-v6", "RFC 7535", "True", nil},
	{"2001:10::/28", "Deprecated (previously ORCHID)", "RFC 4843", "N/A", nil},
	{"2001:20::/28", "ORCHIDv2", "RFC 7343", "True", nil},
	{"2001:30::/28", "Drone Remote ID Protocol Entity Tags (DETs) Prefix", "RFC 9374", "True", nil},
	{"2001:db8::/32", "Documentation", "RFC 3849", "False", nil},
	{"2002::/16", "6to4", "RFC 3056", "N/A", sixToFourSite},
	{"2620:4f:8000::/48", "Direct Delegation AS112 Service", "RFC 7534", "True", nil},
	{"3fff::/20", "Documentation", "RFC 9637", "False", nil},
	{"5f00::/16", "Segment Routing (SRv6) SIDs", "RFC 9602", "False", nil},
	{"fc00::/7", "Unique-Local", "RFC 4193, RFC 8190", "False", nil},
	{"fe80::/10", "Link-Local Unicast", "RFC 4291", "False", nil},
	// Not in the special-purpose registry: the address architecture's.
	{"::/96", "IPv4-compatible (deprecated)", "RFC 4291 §2.5.5.1", "", nil},
	{"::ffff:0:0:0/96", "IPv4-translated", "RFC 2765 §2.1", "", nil},
	{"fec0::/10", "Site-local (deprecated)", "RFC 3879", "", nil},
	{"ff00::/8", "Multicast", "RFC 4291", "", nil},
}

// specialV4 is the oracle for the IPv4 address an IPv6 block carries: in
// a row of the IPv4 table.
func specialV4(a netip.Addr) bool {
	return slices.ContainsFunc(ipv4Registry, func(b block) bool { return netip.MustParsePrefix(b.prefix).Contains(a) })
}

// span is the first, a middle (the top host bit set) and the last address
// of p.
func span(p netip.Prefix) []netip.Addr {
	p = p.Masked()
	first := p.Addr().AsSlice()
	mid, last := slices.Clone(first), slices.Clone(first)
	n := len(first) * 8
	if p.Bits() < n {
		mid[p.Bits()/8] |= 0x80 >> (p.Bits() % 8)
	}
	for i := p.Bits(); i < n; i++ {
		last[i/8] |= 0x80 >> (i % 8)
	}
	out := make([]netip.Addr, 0, 3)
	for _, b := range [][]byte{first, mid, last} {
		a, _ := netip.AddrFromSlice(b)
		if !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	return out
}

// checkAll asserts Refused, the dialer's Control hook and CheckURL (the
// URL validation of webhooks) agree that a is refused or not.
func checkAll(t *testing.T, a netip.Addr, want bool, why string) {
	t.Helper()
	if got := netguard.Refused(a); got != want {
		t.Errorf("Refused(%s) = %v, want %v (%s)", a, got, want, why)
	}
	err := netguard.Control("tcp", netip.AddrPortFrom(a, 443).String(), nil)
	if got := errors.Is(err, netguard.ErrRefused); got != want {
		t.Errorf("Control(%s) = %v, want refused %v (%s)", a, err, want, why)
	}
	host := a.String()
	if a.Is6() {
		host = "[" + host + "]"
	}
	_, err = netguard.CheckURL(context.Background(), "https://"+host+"/hook", netguard.URLPolicy{Resolver: fixed{a}})
	if got := err != nil; got != want {
		t.Errorf("CheckURL(https://%s/hook) = %v, want refused %v (%s)", host, err, want, why)
	}
}

// TestSpecialPurposeRegistries: the first, a middle and the last address
// of every block of both registries is refused, or, for the blocks that
// carry an IPv4 address, refused exactly when that address is.
func TestSpecialPurposeRegistries(t *testing.T) {
	t.Parallel()
	for _, b := range slices.Concat(ipv4Registry, ipv6Registry) {
		for _, a := range span(netip.MustParsePrefix(b.prefix)) {
			want, why := true, b.prefix+" "+b.name+", "+b.rfc+", globally reachable: "+b.global
			if b.carries != nil {
				v4 := b.carries(a)
				want, why = specialV4(v4), why+", carrying "+v4.String()
			}
			checkAll(t, a, want, why)
		}
	}
}

// TestEmbeddedIPv4: loopback, private and metadata addresses written in
// every IPv6 form that carries an IPv4 address are refused; the forms a
// public address may take through a translator stay allowed, the others
// are refused whatever they carry.
func TestEmbeddedIPv4(t *testing.T) {
	t.Parallel()
	tests := []struct {
		addr string
		want bool
	}{
		{"::ffff:127.0.0.1", true},                     // mapped
		{"::ffff:10.0.0.1", true},                      //
		{"::ffff:169.254.169.254", true},               //
		{"::ffff:8.8.8.8", false},                      // dialled as 8.8.8.8
		{"::ffff:0:127.0.0.1", true},                   // translated (the reported bypass)
		{"::ffff:0:7f00:1", true},                      //
		{"::ffff:0:10.0.0.1", true},                    //
		{"::ffff:0:8.8.8.8", true},                     // refused whatever it carries
		{"::127.0.0.1", true},                          // compatible
		{"::8.8.8.8", true},                            //
		{"64:ff9b::127.0.0.1", true},                   // NAT64
		{"64:ff9b::10.0.0.1", true},                    //
		{"64:ff9b::169.254.169.254", true},             //
		{"64:ff9b::192.168.1.1", true},                 //
		{"64:ff9b::8.8.8.8", false},                    //
		{"64:ff9b:1::808:808", true},                   // local-use NAT64: refused whatever it carries
		{"64:ff9b:1:ffff::7f00:1", true},               //
		{"2002:7f00:1::1", true},                       // 6to4 of 127.0.0.1
		{"2002:a00:1::1", true},                        // 6to4 of 10.0.0.1
		{"2002:c0a8:101::1", true},                     // 6to4 of 192.168.1.1
		{"2002:a9fe:a9fe::1", true},                    // 6to4 of 169.254.169.254
		{"2002:808:808::1", false},                     // 6to4 of 8.8.8.8
		{"2001:0:4136:e378:8000:63bf:3fff:fdd2", true}, // Teredo
		{"2001::ffff:7f00:1", true},                    // Teredo
		{"fe80::1%eth0", true},                         // zoned link-local
	}
	for _, tt := range tests {
		checkAll(t, netip.MustParseAddr(tt.addr), tt.want, tt.addr)
	}
}

// TestReachableAllowed: public addresses, including the neighbours just
// outside refused blocks, stay allowed.
func TestReachableAllowed(t *testing.T) {
	t.Parallel()
	for _, s := range []string{
		"1.1.1.1", "8.8.8.8", "93.184.216.34",
		"1.0.0.0", "9.255.255.255", "11.0.0.0", "100.63.255.255", "100.128.0.0", "126.255.255.255",
		"128.0.0.0", "169.253.255.255", "169.255.0.0", "172.15.255.255", "172.32.0.0",
		"192.0.1.0", "192.0.3.0", "192.31.195.255", "192.31.197.0", "192.52.192.255", "192.52.194.0",
		"192.88.98.255", "192.88.100.0", "192.167.255.255", "192.169.0.0", "192.175.47.255", "192.175.49.0",
		"198.17.255.255", "198.20.0.0", "198.51.99.255", "198.51.101.0", "203.0.112.255", "203.0.114.0",
		"223.255.255.255",
		"2606:4700:4700::1111", "2606:4700::1111", "2a00:1450:4001:80b::200e", "2001:4860:4860::8888",
		"2001:200::1", "2001:db7:ffff:ffff::1", "2001:db9::1", "2620:4f:7fff:ffff::1", "2620:4f:8001::1",
		"3fff:1000::1", "3ffe:ffff::1", "2002:808:808::1", "64:ff9b::1.1.1.1",
	} {
		checkAll(t, netip.MustParseAddr(s), false, "globally reachable")
	}
}
