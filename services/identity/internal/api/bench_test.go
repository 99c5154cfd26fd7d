package api_test

import (
	"encoding/json"
	"net/http"
	"testing"
)

// BenchmarkRefresh measures one refresh rotation through the HTTP handler
// against the real database (the hot path of every client every 15 min).
func BenchmarkRefresh(b *testing.B) {
	e := newEnv(b, options{})
	tok := e.login(adminEmail, adminPassword).RefreshToken
	for b.Loop() {
		rec := e.refresh(tok)
		if rec.Code != http.StatusOK {
			b.Fatalf("status %d: %s", rec.Code, rec.Body.String())
		}
		var out envelope[sessionOut]
		if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil {
			b.Fatal(err)
		}
		tok = out.Data.RefreshToken
	}
}
