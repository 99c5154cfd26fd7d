package netguard_test

import (
	"context"
	"net/netip"
	"testing"

	"github.com/opencrm/crm/pkg/netguard"
)

// FuzzCheckURL: whatever the input, an accepted URL is https with a host
// and no user info, and none of its addresses (here every name resolves to
// the fuzzed address) is refused.
func FuzzCheckURL(f *testing.F) {
	for _, s := range []string{"https://hooks.example.com/x", "https://127.0.0.1/", "https://[::ffff:7f00:1]/",
		"https://u:p@a.example/", "file:///etc/passwd", "https://0x7f.1/", "https://[fe80::1%25eth0]/",
		"https://[64:ff9b::a9fe:a9fe]/", "https://2130706433/", "HTTPS://A.EXAMPLE:443/"} {
		f.Add(s, "93.184.216.34")
		f.Add(s, "127.0.0.1")
	}
	f.Fuzz(func(t *testing.T, raw, ip string) {
		a, err := netip.ParseAddr(ip)
		if err != nil {
			a = netip.MustParseAddr("93.184.216.34")
		}
		u, err := netguard.CheckURL(context.Background(), raw, netguard.URLPolicy{Resolver: fixed{a}})
		if err != nil {
			return
		}
		if u.User != nil || u.Hostname() == "" {
			t.Fatalf("accepted %q", raw)
		}
		addrs, err := netguard.Lookup(context.Background(), fixed{a}, u.Hostname())
		if err != nil {
			t.Fatalf("accepted %q whose host does not resolve", raw)
		}
		for _, x := range addrs {
			if netguard.Refused(x) {
				t.Fatalf("accepted %q resolving to refused %s", raw, x)
			}
		}
	})
}

type fixed struct{ a netip.Addr }

func (f fixed) LookupNetIP(context.Context, string, string) ([]netip.Addr, error) {
	return []netip.Addr{f.a}, nil
}
