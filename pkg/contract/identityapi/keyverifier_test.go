package identityapi_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/opencrm/crm/pkg/contract/identityapi"
	"github.com/opencrm/crm/pkg/contract/identityapi/identityapitest"
	"github.com/opencrm/crm/pkg/problem"
)

const secret = "test-internal-secret-0123456789"

type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func newVerifier(t *testing.T) (*identityapitest.Fake, *identityapi.KeyVerifier, *clock) {
	t.Helper()
	f := identityapitest.NewFake(secret)
	_, c := f.Start(t)
	v, err := identityapi.NewKeyVerifier(c, identityapi.MaxKeyCacheTTL)
	if err != nil {
		t.Fatal(err)
	}
	clk := &clock{now: time.Now()}
	v.SetClock(clk.Now)
	return f, v, clk
}

func TestKeyVerifierRefusesBeforeAsking(t *testing.T) {
	t.Parallel()
	f, v, _ := newVerifier(t)
	for _, k := range []string{"", strings.Repeat("k", identityapi.MaxKeyLength+1), "crm_live key", "crm\nx"} {
		if _, err := v.Verify(context.Background(), k); !errors.Is(err, identityapi.ErrUnknownKey) {
			t.Errorf("Verify(%q) = %v, want ErrUnknownKey", k, err)
		}
	}
	if n := f.Verifications(); n != 0 {
		t.Errorf("identity asked %d times, want 0", n)
	}
	if _, err := identityapi.NewKeyVerifier(nil, time.Second); err == nil {
		t.Error("a verifier without a client was built")
	}
	if _, err := identityapi.NewKeyVerifier(identityapi.New("http://x", secret), 6*time.Second); err == nil {
		t.Error("a cache longer than 5 s was accepted")
	}
}

// TestKeyVerifierCachesVerdictsNotFailures: valid and unknown verdicts are
// reused within the TTL, a revocation is seen once it expires, and an
// identity failure is not cached.
func TestKeyVerifierCachesVerdictsNotFailures(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f, v, clk := newVerifier(t)
	const key = "crm_live_cached_0123456789"
	f.AddKey(key, identityapi.VerifiedKey{ID: 7, Name: "Web"})
	for range 3 {
		if k, err := v.Verify(ctx, key); err != nil || k.ID != 7 {
			t.Fatalf("Verify = %+v, %v", k, err)
		}
	}
	for range 2 {
		if _, err := v.Verify(ctx, "crm_live_guess"); !errors.Is(err, identityapi.ErrUnknownKey) {
			t.Fatalf("guess: %v", err)
		}
	}
	if n := f.Verifications(); n != 2 {
		t.Errorf("identity asked %d times, want 2 (one per key)", n)
	}
	f.RevokeKey(key)
	if _, err := v.Verify(ctx, key); err != nil {
		t.Errorf("within the TTL the cached verdict stands: %v", err)
	}
	clk.Add(identityapi.MaxKeyCacheTTL)
	if _, err := v.Verify(ctx, key); !errors.Is(err, identityapi.ErrUnknownKey) {
		t.Errorf("revoked key after the TTL: %v", err)
	}
	f.FailWith(http.StatusServiceUnavailable)
	var p *problem.Error
	for range 2 {
		if _, err := v.Verify(ctx, "crm_live_other"); !errors.As(err, &p) || p.Status != http.StatusServiceUnavailable {
			t.Errorf("identity down: %v, want 503", err)
		}
	}
	if n := f.Verifications(); n != 5 {
		t.Errorf("identity asked %d times, want 5 (failures are not cached)", n)
	}
}

func TestKeyVerifierConcurrentMissesAskOnce(t *testing.T) {
	t.Parallel()
	f, v, _ := newVerifier(t)
	const key = "crm_live_busy_0123456789"
	f.AddKey(key, identityapi.VerifiedKey{})
	gate := make(chan struct{})
	f.Hold(gate)
	var wg sync.WaitGroup
	errs := make(chan error, 20)
	for range 20 {
		wg.Go(func() {
			_, err := v.Verify(context.Background(), key)
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
	if n := f.Verifications(); n != 1 {
		t.Errorf("identity asked %d times, want 1", n)
	}
}
