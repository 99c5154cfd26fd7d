package netguard

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strings"
)

// Resolver looks a host name up; *net.Resolver is one, tests pass their
// own to play a DNS answer that changes.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// URLPolicy is what CheckURL accepts.
type URLPolicy struct {
	// AllowHTTP accepts http as well as https.
	AllowHTTP bool
	// AllowPrivate skips the address check (development and tests, where
	// receivers listen on 127.0.0.1).
	AllowPrivate bool
	// Resolver looks host names up; nil is net.DefaultResolver.
	Resolver Resolver
	// Exempt are prefixes accepted although refused.
	Exempt Exempt
}

// URLError is a URL CheckURL refuses; its message is written for the
// person who typed the URL.
type URLError struct{ Reason string }

func (e *URLError) Error() string { return e.Reason }

// ErrLookup is a host name that does not resolve (or the lookup failed).
var ErrLookup = errors.New("the host name does not resolve")

// CheckURL parses raw and refuses, with a *URLError, a URL that is not
// absolute, uses a scheme other than https (or http when allowed), carries
// a user name or password, or whose host resolves to any refused address.
func CheckURL(ctx context.Context, raw string, p URLPolicy) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, &URLError{"must be a valid URL"}
	}
	if !u.IsAbs() || u.Opaque != "" {
		return nil, &URLError{"must be an absolute URL"}
	}
	switch strings.ToLower(u.Scheme) {
	case "https":
	case "http":
		if !p.AllowHTTP {
			return nil, &URLError{"must use https"}
		}
	default:
		return nil, &URLError{"must use https"}
	}
	if u.User != nil {
		return nil, &URLError{"must not contain a user name or password"}
	}
	host := u.Hostname()
	if host == "" {
		return nil, &URLError{"must name a host"}
	}
	if port := u.Port(); port != "" {
		if n, err := parsePort(port); err != nil || n == 0 {
			return nil, &URLError{"must have a valid port"}
		}
	}
	if p.AllowPrivate {
		return u, nil
	}
	addrs, err := Lookup(ctx, p.Resolver, host)
	if err != nil {
		return nil, &URLError{"the host name does not resolve"}
	}
	for _, a := range addrs {
		if p.Exempt.Refused(a) {
			return nil, &URLError{"must not point to a private, loopback or otherwise reserved address"}
		}
	}
	return u, nil
}

func parsePort(s string) (int, error) {
	n := 0
	if len(s) > 5 {
		return 0, errors.New("port too long")
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0, errors.New("port not a number")
		}
		n = n*10 + int(c-'0')
	}
	if n > 65535 {
		return 0, errors.New("port out of range")
	}
	return n, nil
}

// Lookup resolves host with r (nil: net.DefaultResolver); an IP literal
// is its own answer.
func Lookup(ctx context.Context, r Resolver, host string) ([]netip.Addr, error) {
	if a, err := netip.ParseAddr(host); err == nil {
		return []netip.Addr{a}, nil
	}
	if r == nil {
		r = net.DefaultResolver
	}
	addrs, err := r.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return nil, fmt.Errorf("%w: %s", ErrLookup, host)
	}
	if len(addrs) == 0 {
		return nil, fmt.Errorf("%w: %s", ErrLookup, host)
	}
	return addrs, nil
}
