package gateway

import (
	"io"
	"net/http"
	"testing"
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
