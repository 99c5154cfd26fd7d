package gateway

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/opencrm/crm/pkg/contract/identityapi"
)

// BenchmarkProxyJWT measures a JWT-authenticated GET through the gateway
// (verification, both rate limits in Redis, proxy to a fake service).
func BenchmarkProxyJWT(b *testing.B) {
	// Limits high enough not to trip, so Redis is still asked every time.
	e := newEnv(b, func(c *Config) { c.UserPerMinute, c.IPPerMinute = 1_000_000, 1_000_000 })
	tok := e.iss.User(b, 7)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			hr, _ := http.NewRequest("GET", e.base+"/api/contacts/7?x=1", nil)
			hr.Header.Set("Authorization", "Bearer "+tok)
			resp, err := e.client.Do(hr)
			if err != nil {
				b.Error(err)
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				b.Errorf("status %d", resp.StatusCode)
				return
			}
		}
	})
}

// BenchmarkDirect is the same request straight to the fake service, the
// baseline for the gateway's overhead.
func BenchmarkDirect(b *testing.B) {
	e := newEnv(b, nil)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			resp, err := e.client.Get(e.ups[SvcContacts].srv.URL + "/contacts/7?x=1")
			if err != nil {
				b.Error(err)
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
		}
	})
}

// BenchmarkProxyContactList is the unfiltered contact list through the
// gateway (JWT, both rate limits, proxy) to a fake service.
func BenchmarkProxyContactList(b *testing.B) {
	e := newEnv(b, func(c *Config) { c.UserPerMinute, c.IPPerMinute = 1_000_000, 1_000_000 })
	tok := e.iss.User(b, 7)
	benchGateway(b, func() *http.Request {
		hr, _ := http.NewRequest("GET", e.base+"/api/contacts", nil)
		hr.Header.Set("Authorization", "Bearer "+tok)
		return hr
	}, e, http.StatusOK)
}

// BenchmarkProxyPublicLead is POST /public/leads through the gateway (API
// key, rate limits, 64 KiB body limit, proxy) to a fake intake answering
// 201.
func BenchmarkProxyPublicLead(b *testing.B) {
	e := newEnv(b, func(c *Config) { c.UserPerMinute, c.IPPerMinute = 1_000_000, 1_000_000 })
	e.identity.AddKey("crm_bench", identityapi.VerifiedKey{})
	const body = `{"first_name":"Wendy","last_name":"Web","email":"wendy@example.com","source":"website"}`
	benchGateway(b, func() *http.Request {
		hr, _ := http.NewRequest("POST", e.base+"/api/public/leads?created=1", strings.NewReader(body))
		hr.Header.Set("X-API-Key", "crm_bench")
		hr.Header.Set("Content-Type", "application/json")
		return hr
	}, e, http.StatusCreated)
}

func benchGateway(b *testing.B, newReq func() *http.Request, e *env, want int) {
	b.Helper()
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			resp, err := e.client.Do(newReq())
			if err != nil {
				b.Error(err)
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
			if resp.StatusCode != want {
				b.Errorf("status %d, want %d", resp.StatusCode, want)
				return
			}
		}
	})
}

// BenchmarkMatch is the lookup of a request's declaration, the part of
// every request the declarations cost (a ServeMux lookup on a pooled
// request).
func BenchmarkMatch(b *testing.B) {
	tbl := newTable(Routes())
	b.ReportAllocs()
	for b.Loop() {
		if rt, _ := tbl.match("GET", "/contacts/42/tasks/7"); rt == nil {
			b.Fatal("no route")
		}
	}
}
