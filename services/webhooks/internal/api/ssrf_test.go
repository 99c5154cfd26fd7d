package api_test

import (
	"net/http"
	"testing"

	"github.com/opencrm/crm/pkg/problem/problemtest"
)

// TestEmbeddedLoopbackRefused: IPv6 forms that carry a loopback, private
// or metadata IPv4 address (IPv4-translated ::ffff:0:a.b.c.d among them)
// are refused when a URL is saved, whether written as a literal or
// answered by DNS.
func TestEmbeddedLoopbackRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t, strict(), noWorkers())
	e.dns.set("translated.example.com", "::ffff:0:7f00:1")
	const refused = "must not point to a private, loopback or otherwise reserved address"
	for _, url := range []string{
		"https://[::ffff:0:127.0.0.1]/",
		"https://[::ffff:0:a9fe:a9fe]/latest",
		"https://[::127.0.0.1]/",
		"https://[64:ff9b::127.0.0.1]/",
		"https://[64:ff9b:1::a00:1]/",
		"https://[2002:7f00:1::1]/",
		"https://[2001::ffff:7f00:1]/",
		"https://[100:0:0:1::1]/",
		"https://[5f00::1]/",
		"https://192.88.99.1/",
		"https://translated.example.com/",
	} {
		t.Run(url, func(t *testing.T) {
			r := e.do(http.MethodPost, "/webhooks", e.admin, map[string]any{"url": url, "events": []string{"*"}})
			b := problemtest.Want(t, r.status, r.header, r.body, http.StatusUnprocessableEntity, "validation_failed", "url")
			if b.Errors[0].Message != refused {
				t.Errorf("message = %q, want %q", b.Errors[0].Message, refused)
			}
		})
	}
	r := e.do(http.MethodGet, "/webhooks", e.admin, nil)
	if got := decode[page[hook]](t, r).Total; got != 0 {
		t.Fatalf("%d webhooks stored after refused creates", got)
	}
}
