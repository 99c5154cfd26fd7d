package netguard_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/opencrm/crm/pkg/netguard"
)

func TestRefused(t *testing.T) {
	t.Parallel()
	tests := []struct {
		addr string
		want bool
	}{
		{"127.0.0.1", true},
		{"127.1.2.3", true},
		{"10.0.0.1", true},
		{"172.16.5.4", true},
		{"172.32.0.1", false},
		{"192.168.1.1", true},
		{"169.254.169.254", true},
		{"100.64.0.1", true},
		{"0.0.0.0", true},
		{"0.1.2.3", true},
		{"255.255.255.255", true},
		{"240.0.0.1", true},
		{"224.0.0.1", true},
		{"192.0.0.8", true},
		{"198.18.0.1", true},
		{"::1", true},
		{"::", true},
		{"::ffff:127.0.0.1", true},
		{"::ffff:10.0.0.1", true},
		{"::127.0.0.1", true},
		{"64:ff9b::7f00:1", true},
		{"64:ff9b::a9fe:a9fe", true},
		{"64:ff9b::808:808", false},
		{"fd00:ec2::254", true},
		{"2002:7f00:1::1", true},
		{"2002:a9fe:a9fe::1", true},
		{"2002:808:808::1", false},
		{"fc00::1", true},
		{"fe80::1", true},
		{"fe80::1%eth0", true},
		{"ff02::1", true},
		{"8.8.8.8", false},
		{"93.184.216.34", false},
		{"::ffff:8.8.8.8", false},
		{"2606:4700:4700::1111", false},
	}
	for _, tt := range tests {
		if got := netguard.Refused(netip.MustParseAddr(tt.addr)); got != tt.want {
			t.Errorf("Refused(%s) = %v, want %v", tt.addr, got, tt.want)
		}
	}
	if !netguard.Refused(netip.Addr{}) {
		t.Error("the zero Addr is not refused")
	}
}

func TestControl(t *testing.T) {
	t.Parallel()
	for addr, want := range map[string]error{
		"127.0.0.1:80":         netguard.ErrRefused,
		"[::ffff:10.0.0.1]:80": netguard.ErrRefused,
		"not an address":       netguard.ErrRefused,
		"8.8.8.8:443":          nil,
	} {
		if got := netguard.Control("tcp", addr, nil); !errors.Is(got, want) {
			t.Errorf("Control(%q) = %v, want %v", addr, got, want)
		}
	}
}

// resolver answers from a map that a test may change between calls.
type resolver map[string][]netip.Addr

func (r resolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	a, ok := r[host]
	if !ok {
		return nil, errors.New("no such host")
	}
	return a, nil
}

func TestCheckURL(t *testing.T) {
	t.Parallel()
	r := resolver{
		"hooks.example.com": {netip.MustParseAddr("93.184.216.34")},
		"inside.example":    {netip.MustParseAddr("93.184.216.34"), netip.MustParseAddr("10.0.0.7")},
	}
	strict := netguard.URLPolicy{Resolver: r}
	tests := []struct {
		name, url string
		p         netguard.URLPolicy
		want      string // "" accepted
	}{
		{"https public", "https://hooks.example.com/crm", strict, ""},
		{"https public port", "https://hooks.example.com:8443/crm", strict, ""},
		{"public literal", "https://8.8.8.8/x", strict, ""},
		{"http refused", "http://hooks.example.com/", strict, "must use https"},
		{"http allowed", "http://hooks.example.com/", netguard.URLPolicy{AllowHTTP: true, Resolver: r}, ""},
		{"ftp", "ftp://hooks.example.com/", netguard.URLPolicy{AllowHTTP: true, Resolver: r}, "must use https"},
		{"file", "file:///etc/passwd", strict, "must use https"},
		{"gopher", "gopher://hooks.example.com/", strict, "must use https"},
		{"relative", "/crm", strict, "must be an absolute URL"},
		{"opaque", "https:hooks.example.com", strict, "must be an absolute URL"},
		{"userinfo", "https://user:pw@hooks.example.com/", strict, "must not contain a user name or password"},
		{"no host", "https:///x", strict, "must name a host"},
		{"bad port", "https://hooks.example.com:99999/", strict, "must have a valid port"},
		{"loopback", "https://127.0.0.1/", strict, "must not point to a private, loopback or otherwise reserved address"},
		{"private", "https://10.0.0.1/", strict, "must not point to a private, loopback or otherwise reserved address"},
		{"metadata", "https://169.254.169.254/latest/meta-data", strict, "must not point to a private, loopback or otherwise reserved address"},
		{"v6 loopback", "https://[::1]/", strict, "must not point to a private, loopback or otherwise reserved address"},
		{"mapped loopback", "https://[::ffff:127.0.0.1]/", strict, "must not point to a private, loopback or otherwise reserved address"},
		{"one address private", "https://inside.example/", strict, "must not point to a private, loopback or otherwise reserved address"},
		{"unresolvable", "https://nowhere.example/", strict, "the host name does not resolve"},
		{"private allowed", "https://127.0.0.1/", netguard.URLPolicy{AllowPrivate: true}, ""},
		{"garbage", "https://%zz", strict, "must be a valid URL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := netguard.CheckURL(context.Background(), tt.url, tt.p)
			got := ""
			if err != nil {
				var ue *netguard.URLError
				if !errors.As(err, &ue) {
					t.Fatalf("error %v is not a URLError", err)
				}
				got = ue.Reason
			}
			if got != tt.want {
				t.Errorf("CheckURL(%q) = %q, want %q", tt.url, got, tt.want)
			}
		})
	}
}

func TestClientRefusesPrivateAtDialAndFollowsNoRedirect(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/away" {
			http.Redirect(w, r, "/elsewhere", http.StatusFound)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	port := u.Port()

	// The name resolved to a public address when the URL was saved; it
	// now answers 127.0.0.1 (DNS rebinding): the dial is refused.
	r := resolver{"hooks.example.com": {netip.MustParseAddr("127.0.0.1")}}
	strict := netguard.NewClient(netguard.ClientOptions{Timeout: 2 * time.Second, Resolver: r})
	_, err := strict.Post("http://hooks.example.com:"+port+"/", "application/json", strings.NewReader("{}"))
	if !errors.Is(err, netguard.ErrRefused) {
		t.Fatalf("strict client: err = %v, want ErrRefused", err)
	}
	_, err = strict.Get(srv.URL)
	if !errors.Is(err, netguard.ErrRefused) {
		t.Fatalf("strict client to a literal: err = %v, want ErrRefused", err)
	}

	open := netguard.NewClient(netguard.ClientOptions{Timeout: 2 * time.Second, AllowPrivate: true, Resolver: r})
	resp, err := open.Get("http://hooks.example.com:" + port + "/away")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound {
		t.Fatalf("status %d, want the redirect itself (302)", resp.StatusCode)
	}
}
