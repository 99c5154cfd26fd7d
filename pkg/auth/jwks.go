package auth

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/opencrm/crm/pkg/problem"
)

// JWK is one public key of a JSON Web Key Set (RFC 8037 OKP / Ed25519).
type JWK struct {
	Kty string `json:"kty"`
	Crv string `json:"crv"`
	X   string `json:"x"`
	Kid string `json:"kid"`
	Alg string `json:"alg"`
	Use string `json:"use"`
}

// JWKSet is the body of GET /auth/jwks.
type JWKSet struct {
	Keys []JWK `json:"keys"`
}

// PublicJWK encodes an Ed25519 public key as a JWK.
func PublicJWK(kid string, pub ed25519.PublicKey) JWK {
	return JWK{Kty: "OKP", Crv: "Ed25519", X: base64.RawURLEncoding.EncodeToString(pub), Kid: kid, Alg: "EdDSA", Use: "sig"}
}

// JWKS is a KeySource backed by identity's JWKS endpoint. Keys are cached;
// an unknown kid triggers a refresh at most once per MinRefresh, so a flood
// of forged kids cannot turn into a flood of requests to identity. The set
// is also replaced once it is MaxAge old, so a key identity stops
// publishing (retired, or withdrawn after a leak) stops verifying here too;
// while identity cannot be reached the cached keys keep working.
//
// No lookup waits for identity unless it has to: the lock is never held
// during a fetch, a known key answers from the cache at once (when the set
// is MaxAge old, while one refresh runs in the background), and only a kid
// the cache does not know waits, for the one fetch in flight.
type JWKS struct {
	URL        string
	Client     *http.Client
	MinRefresh time.Duration
	MaxAge     time.Duration

	mu       sync.Mutex
	keys     map[string]ed25519.PublicKey
	fetched  time.Time // when keys were published to us
	tried    time.Time // last fetch attempt, successful or not
	lastErr  error     // of the last completed attempt
	inflight *jwksFetch
}

// jwksFetch is one fetch in flight; done is closed when it has ended and
// its result, if any, is in the cache.
type jwksFetch struct{ done chan struct{} }

// NewJWKS returns a source reading url.
func NewJWKS(url string) *JWKS {
	return &JWKS{URL: url, Client: &http.Client{Timeout: 5 * time.Second}, MinRefresh: 10 * time.Second, MaxAge: 5 * time.Minute}
}

// errNoKeys is the answer while no key set was ever fetched.
func errNoKeys() error { return problem.Unavailable("signing keys are unavailable", 5) }

// Key returns the key for kid. A known key answers from the cache; once
// the set is MaxAge old a refresh starts in the background and the cached
// key still answers meanwhile. An unknown kid waits for a fetch (the one in
// flight, or a new one at most once per MinRefresh) and ctx bounds the
// wait.
func (j *JWKS) Key(ctx context.Context, kid string) (ed25519.PublicKey, error) {
	j.mu.Lock()
	k, known := j.keys[kid]
	if known {
		if time.Since(j.fetched) >= j.MaxAge {
			j.refreshLocked()
		}
		j.mu.Unlock()
		return k, nil
	}
	if !j.awaitRefresh(ctx) {
		return nil, errNoKeys()
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.keys == nil {
		return nil, errNoKeys()
	}
	if k, known := j.keys[kid]; known {
		return k, nil
	}
	return nil, ErrUnknownKey
}

// Ready reports whether there are keys to verify with. While none was ever
// fetched it asks identity (at most once per MinRefresh, sharing a fetch in
// flight) and waits for the answer until ctx ends; once a set has been
// fetched it never waits, even while identity is away.
func (j *JWKS) Ready(ctx context.Context) error {
	j.mu.Lock()
	if j.keys != nil {
		j.mu.Unlock()
		return nil
	}
	j.awaitRefresh(ctx)
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.keys != nil {
		return nil
	}
	if j.lastErr != nil {
		return fmt.Errorf("jwks: no keys yet: %w", j.lastErr)
	}
	return errors.New("jwks: no keys yet")
}

// State reports when the cached set was fetched (zero: never) and the
// error of the latest completed fetch (nil when it succeeded), for
// readiness reports and metrics.
func (j *JWKS) State() (fetched time.Time, lastErr error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.fetched, j.lastErr
}

// awaitRefresh is called with j.mu held and returns with it released: it
// joins or starts a fetch (refreshLocked) and waits for it; false when ctx
// ended first.
func (j *JWKS) awaitRefresh(ctx context.Context) bool {
	f := j.refreshLocked()
	j.mu.Unlock()
	if f == nil {
		return true
	}
	select {
	case <-f.done:
		return true
	case <-ctx.Done():
		return false
	}
}

// refreshLocked returns the fetch in flight, or starts one when the last
// attempt is at least MinRefresh old; nil when neither. j.mu is held.
func (j *JWKS) refreshLocked() *jwksFetch {
	if j.inflight != nil {
		return j.inflight
	}
	if !j.tried.IsZero() && time.Since(j.tried) < j.MinRefresh {
		return nil
	}
	f := &jwksFetch{done: make(chan struct{})}
	j.inflight, j.tried = f, time.Now()
	started := j.tried
	go func() {
		// Shared by every waiter, so no caller's context: the client's
		// timeout bounds it.
		keys, err := j.fetch(context.Background())
		j.mu.Lock()
		if err == nil {
			j.keys, j.fetched = keys, started
		}
		j.lastErr, j.inflight = err, nil
		j.mu.Unlock()
		close(f.done)
	}()
	return f
}

func (j *JWKS) fetch(ctx context.Context) (map[string]ed25519.PublicKey, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, j.URL, nil)
	if err != nil {
		return nil, err
	}
	resp, err := j.Client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("jwks: status %d", resp.StatusCode)
	}
	var set JWKSet
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&set); err != nil {
		return nil, err
	}
	return ParseJWKSet(set)
}

// ParseJWKSet keeps the Ed25519 signing keys of a set.
func ParseJWKSet(set JWKSet) (map[string]ed25519.PublicKey, error) {
	keys := map[string]ed25519.PublicKey{}
	for _, k := range set.Keys {
		if k.Kty != "OKP" || k.Crv != "Ed25519" || k.Kid == "" {
			continue
		}
		raw, err := base64.RawURLEncoding.DecodeString(k.X)
		if err != nil || len(raw) != ed25519.PublicKeySize {
			continue
		}
		keys[k.Kid] = ed25519.PublicKey(raw)
	}
	if len(keys) == 0 {
		return nil, errors.New("jwks: no usable keys")
	}
	return keys, nil
}

// StaticKeys is a fixed KeySource.
type StaticKeys map[string]ed25519.PublicKey

// Key implements KeySource.
func (s StaticKeys) Key(_ context.Context, kid string) (ed25519.PublicKey, error) {
	if k, ok := s[kid]; ok {
		return k, nil
	}
	return nil, ErrUnknownKey
}
