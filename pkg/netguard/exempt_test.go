package netguard_test

import (
	"net/netip"
	"testing"

	"github.com/opencrm/crm/pkg/netguard"
)

func TestExempt(t *testing.T) {
	t.Parallel()
	ex, err := netguard.ParseExempt(" 127.0.0.2 , 10.20.0.0/16,fd00:1::/64")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		addr    string
		refused bool
	}{
		{"127.0.0.2", false},
		{"::ffff:127.0.0.2", false},
		{"127.0.0.1", true},
		{"10.20.3.4", false},
		{"10.21.0.1", true},
		{"169.254.169.254", true},
		{"fd00:1::5", false},
		{"fd00:2::5", true},
		{"93.184.216.34", false},
	}
	for _, tt := range tests {
		if got := ex.Refused(netip.MustParseAddr(tt.addr)); got != tt.refused {
			t.Errorf("Refused(%s) = %v, want %v", tt.addr, got, tt.refused)
		}
		if err := ex.Control("tcp4", netip.AddrPortFrom(netip.MustParseAddr(tt.addr), 443).String(), nil); (err != nil) != tt.refused {
			t.Errorf("Control(%s) = %v, want refused %v", tt.addr, err, tt.refused)
		}
	}
	var none netguard.Exempt
	if !none.Refused(netip.MustParseAddr("127.0.0.2")) {
		t.Error("an empty Exempt exempts loopback")
	}
	for _, bad := range []string{"10.0.0.0/33", "localhost", "10.0.0.1/8/2"} {
		if _, err := netguard.ParseExempt(bad); err == nil {
			t.Errorf("ParseExempt(%q) accepted", bad)
		}
	}
}
