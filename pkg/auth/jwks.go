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
type JWKS struct {
	URL        string
	Client     *http.Client
	MinRefresh time.Duration
	MaxAge     time.Duration

	mu      sync.Mutex
	keys    map[string]ed25519.PublicKey
	fetched time.Time // when keys were published to us
	tried   time.Time // last fetch attempt, successful or not
}

// NewJWKS returns a source reading url.
func NewJWKS(url string) *JWKS {
	return &JWKS{URL: url, Client: &http.Client{Timeout: 5 * time.Second}, MinRefresh: 10 * time.Second, MaxAge: 5 * time.Minute}
}

// Key returns the key for kid, refreshing the set when kid is unknown or
// the set is older than MaxAge; at most one fetch per MinRefresh either way.
func (j *JWKS) Key(ctx context.Context, kid string) (ed25519.PublicKey, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	k, known := j.keys[kid]
	if known && time.Since(j.fetched) < j.MaxAge {
		return k, nil
	}
	if !j.tried.IsZero() && time.Since(j.tried) < j.MinRefresh {
		return found(k, known)
	}
	j.tried = time.Now()
	keys, err := j.fetch(ctx)
	if err != nil {
		if j.keys == nil {
			return nil, problem.Unavailable("signing keys are unavailable", 5)
		}
		// Identity is away: keep verifying with what it last published.
		return found(k, known)
	}
	j.keys, j.fetched = keys, j.tried
	k, known = j.keys[kid]
	return found(k, known)
}

func found(k ed25519.PublicKey, known bool) (ed25519.PublicKey, error) {
	if !known {
		return nil, ErrUnknownKey
	}
	return k, nil
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
