package e2e

import (
	"fmt"
	"net/http"
	"testing"
	"time"
)

// BenchmarkAccessTokenList: a list call with an integration token against
// the same call with a person's JWT, through the gateway, interleaved in
// the same run. The token's verification is cached by the gateway (one
// call to identity per token per 5 s), so the target is a median within
// 10 % of the JWT's.
func BenchmarkAccessTokenList(b *testing.B) {
	c := superuser(b)
	seedOnce(b, "tokenbench", func() {
		exec1(b, c, `SET search_path = leads, public`)
		exec1(b, c, `INSERT INTO leads.leads (first_name, last_name, email, source, status)
			SELECT 'Bench' || g, 'Token', 'bench' || g || '@token.example', 'tokenbench', 'new'
			FROM generate_series(1, 2000) g`)
		exec1(b, c, `VACUUM (ANALYZE) leads.leads`)
	})
	adm := benchAdmin(b)
	r, err := adm.Do("POST", "/access-tokens", map[string]any{"name": "bench " + randHex(3), "role": "admin", "scopes": []string{"leads:read"}})
	if err != nil || r.Status != http.StatusCreated {
		b.Fatalf("create token: %v %v", err, r)
	}
	tok := stack.Client().With(r.Data()["token"].(string))
	tok.Record = nil
	const path = "/leads?source=tokenbench&per_page=25"
	call := func(cl *Client) func() error {
		return func() error {
			r, err := cl.Do("GET", path, nil)
			if err == nil && r.Status != http.StatusOK {
				err = fmt.Errorf("%s", r)
			}
			return err
		}
	}
	// Warm both paths (connections, the token's cached verdict).
	for _, cl := range []*Client{adm, tok} {
		if err := call(cl)(); err != nil {
			b.Fatal(err)
		}
	}
	const rounds, n = 10, 40
	var jwtLat, tokLat []time.Duration
	b.ResetTimer()
	for i := 0; i < rounds; i++ {
		// Alternate which goes first so drift on the shared machine
		// lands on both equally.
		first, second := &jwtLat, &tokLat
		fc, sc := adm, tok
		if i%2 == 1 {
			first, second, fc, sc = &tokLat, &jwtLat, tok, adm
		}
		*first = append(*first, latencies(b, n, call(fc))...)
		*second = append(*second, latencies(b, n, call(sc))...)
	}
	b.StopTimer()
	ratio := float64(pct(tokLat, 0.5)) / float64(pct(jwtLat, 0.5))
	met := "yes"
	if ratio > 1.10 {
		met = "no"
	}
	report(b, fmt.Sprintf("List with an integration token vs a JWT through the gateway (%d calls each, interleaved)", rounds*n),
		[]string{"credential", "p50 ms", "p95 ms", "p50 ratio to JWT", "≤ 1.10"},
		[][]string{
			{"JWT (admin)", ms(pct(jwtLat, 0.5)), ms(pct(jwtLat, 0.95)), "1.00", "—"},
			{"crm_pat_ token (admin role, leads:read)", ms(pct(tokLat, 0.5)), ms(pct(tokLat, 0.95)), fmt.Sprintf("%.2f", ratio), met},
		})
}
