package identityapi_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/opencrm/crm/pkg/contract/identityapi"
	"github.com/opencrm/crm/pkg/contract/identityapi/identityapitest"
	"github.com/opencrm/crm/pkg/problem"
)

func newTokenVerifier(t *testing.T) (*identityapitest.Fake, *identityapi.AccessTokenVerifier, *clock) {
	t.Helper()
	f := identityapitest.NewFake(secret)
	_, c := f.Start(t)
	v, err := identityapi.NewAccessTokenVerifier(c, identityapi.MaxKeyCacheTTL)
	if err != nil {
		t.Fatal(err)
	}
	clk := &clock{now: time.Now()}
	v.SetClock(clk.Now)
	return f, v, clk
}

func pat(tag string) string {
	return identityapi.AccessTokenPrefix + tag + strings.Repeat("x", 43-len(tag))
}

func TestAccessTokenVerifierRefusesBeforeAsking(t *testing.T) {
	t.Parallel()
	f, v, _ := newTokenVerifier(t)
	for _, tok := range []string{"", identityapi.AccessTokenPrefix, "crm_live_" + strings.Repeat("k", 43),
		identityapi.AccessTokenPrefix + "<script>", identityapi.AccessTokenPrefix + strings.Repeat("a", identityapi.MaxAccessTokenLength)} {
		if _, err := v.Verify(context.Background(), tok); !errors.Is(err, identityapi.ErrUnknownAccessToken) {
			t.Errorf("Verify(%.20q) = %v, want ErrUnknownAccessToken", tok, err)
		}
	}
	if n := f.TokenVerifications(); n != 0 {
		t.Errorf("identity asked %d times, want 0", n)
	}
	if _, err := identityapi.NewAccessTokenVerifier(nil, time.Second); err == nil {
		t.Error("a verifier without a client was built")
	}
	if _, err := identityapi.NewAccessTokenVerifier(identityapi.New("http://x", secret), 6*time.Second); err == nil {
		t.Error("a cache longer than 5 s was accepted")
	}
}

// TestAccessTokenVerifierCachesVerdictsNotFailures: valid and unknown
// verdicts are reused within the TTL, a revocation is seen once it
// expires, and an identity failure is not cached.
func TestAccessTokenVerifierCachesVerdictsNotFailures(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f, v, clk := newTokenVerifier(t)
	tok := pat("cached")
	want := f.AddAccessToken(tok, identityapi.VerifiedAccessToken{UserID: 77, Scopes: []string{"contacts:read"}})
	for range 3 {
		got, err := v.Verify(ctx, tok)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("Verify (-want +got):\n%s", diff)
		}
	}
	for range 2 {
		if _, err := v.Verify(ctx, pat("guess")); !errors.Is(err, identityapi.ErrUnknownAccessToken) {
			t.Fatalf("guess: %v", err)
		}
	}
	if n := f.TokenVerifications(); n != 2 {
		t.Errorf("identity asked %d times, want 2 (one per token)", n)
	}
	f.RevokeAccessToken(tok)
	if _, err := v.Verify(ctx, tok); err != nil {
		t.Errorf("within the TTL the cached verdict stands: %v", err)
	}
	clk.Add(identityapi.MaxKeyCacheTTL)
	if _, err := v.Verify(ctx, tok); !errors.Is(err, identityapi.ErrUnknownAccessToken) {
		t.Errorf("revoked token after the TTL: %v", err)
	}
	f.FailWith(http.StatusServiceUnavailable)
	var p *problem.Error
	for range 2 {
		if _, err := v.Verify(ctx, pat("other")); !errors.As(err, &p) || p.Status != http.StatusServiceUnavailable {
			t.Errorf("identity down: %v, want 503", err)
		}
	}
	if n := f.TokenVerifications(); n != 5 {
		t.Errorf("identity asked %d times, want 5 (failures are not cached)", n)
	}
}

// TestAccessTokenVerifierNeverOutlivesTheMintedToken: a minted token
// living less than the TTL is asked for again before it expires.
func TestAccessTokenVerifierNeverOutlivesTheMintedToken(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f, v, clk := newTokenVerifier(t)
	tok := pat("short")
	f.AddAccessToken(tok, identityapi.VerifiedAccessToken{ExpiresIn: 4})
	for _, step := range []time.Duration{0, 1900 * time.Millisecond, 100 * time.Millisecond} {
		clk.Add(step)
		if _, err := v.Verify(ctx, tok); err != nil {
			t.Fatal(err)
		}
	}
	// 4 s minus the 2 s margin: the third call, at 2 s, asks again.
	if n := f.TokenVerifications(); n != 2 {
		t.Errorf("identity asked %d times, want 2", n)
	}
}

func TestAccessTokenVerifierConcurrentMissesAskOnce(t *testing.T) {
	t.Parallel()
	f, v, _ := newTokenVerifier(t)
	tok := pat("busy")
	f.AddAccessToken(tok, identityapi.VerifiedAccessToken{})
	gate := make(chan struct{})
	f.Hold(gate)
	var wg sync.WaitGroup
	errs := make(chan error, 20)
	for range 20 {
		wg.Go(func() {
			_, err := v.Verify(context.Background(), tok)
			errs <- err
		})
	}
	time.Sleep(100 * time.Millisecond)
	close(gate)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if n := f.TokenVerifications(); n != 1 {
		t.Errorf("identity asked %d times, want 1", n)
	}
}

// TestVerifyAccessTokenBadAnswer: a verification without the minted
// token is identity's fault (ErrBadAnswer, 502), not an unknown token.
func TestVerifyAccessTokenBadAnswer(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"success":true,"data":{"id":3,"user_id":9}}`))
	}))
	t.Cleanup(srv.Close)
	_, err := identityapi.New(srv.URL, secret).VerifyAccessToken(context.Background(), pat("bad"))
	var p *problem.Error
	if !errors.Is(err, identityapi.ErrBadAnswer) || !errors.As(err, &p) || p.Status != http.StatusBadGateway {
		t.Errorf("err = %v, want ErrBadAnswer and a 502", err)
	}
}
