package netguard

import (
	"context"
	"errors"
	"net"
	"net/http"
	"time"
)

// ClientOptions shape NewClient.
type ClientOptions struct {
	// Timeout bounds a whole request, answer included.
	Timeout time.Duration
	// AllowPrivate dials refused addresses too (development and tests).
	AllowPrivate bool
	// Resolver looks host names up at dial time; nil is net.DefaultResolver.
	Resolver Resolver
	// Exempt are prefixes dialled although refused (an operator's own
	// internal receivers).
	Exempt Exempt
}

// NewClient returns an HTTP client for URLs a user chose: every dial goes
// through Resolver and then through Control on the address dialled, no
// proxy from the environment is used (a proxy would dial for us), and
// redirects are not followed (the caller sees the 3xx), so a public
// receiver cannot bounce a request inside.
func NewClient(o ClientOptions) *http.Client {
	d := &net.Dialer{Timeout: o.Timeout, KeepAlive: 30 * time.Second}
	if !o.AllowPrivate {
		d.Control = o.Exempt.Control
	}
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, err
		}
		addrs, err := Lookup(ctx, o.Resolver, host)
		if err != nil {
			return nil, err
		}
		var first error
		for _, a := range addrs {
			if !o.AllowPrivate && o.Exempt.Refused(a) {
				if first == nil {
					first = ErrRefused
				}
				continue
			}
			c, err := d.DialContext(ctx, network, net.JoinHostPort(a.String(), port))
			if err == nil {
				return c, nil
			}
			if first == nil || errors.Is(first, ErrRefused) {
				first = err
			}
		}
		return nil, first
	}
	tr := &http.Transport{
		Proxy:                 nil,
		DialContext:           dial,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          100,
		MaxIdleConnsPerHost:   4,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   o.Timeout,
		ResponseHeaderTimeout: o.Timeout,
	}
	return &http.Client{
		Transport:     tr,
		Timeout:       o.Timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}
