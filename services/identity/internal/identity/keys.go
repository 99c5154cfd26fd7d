package identity

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/ed25519"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/opencrm/crm/pkg/auth"
)

// Encryption names how a signing key's private half is stored.
const (
	EncryptionNone   = "none"
	EncryptionAESGCM = "aes-256-gcm"
)

// Sealer encrypts signing keys at rest with AES-256-GCM under a key derived
// (HKDF-SHA256) from CRM_SECRET_KEY, so a database dump alone cannot mint
// tokens. Without a secret it stores keys in clear (development only).
type Sealer struct {
	aead cipher.AEAD
}

// NewSealer derives the encryption key from secret; "" stores in clear.
func NewSealer(secret string) (*Sealer, error) {
	if secret == "" {
		return &Sealer{}, nil
	}
	key, err := hkdf.Key(sha256.New, []byte(secret), nil, "crm-identity/signing-keys/v1", 32)
	if err != nil {
		return nil, err
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	return &Sealer{aead: aead}, nil
}

// Encrypted reports whether keys are encrypted at rest.
func (s *Sealer) Encrypted() bool { return s.aead != nil }

// Seal protects priv; the kid is authenticated with it, so ciphertexts
// cannot be swapped between rows.
func (s *Sealer) Seal(kid string, priv []byte) ([]byte, string, error) {
	if s.aead == nil {
		return priv, EncryptionNone, nil
	}
	nonce := make([]byte, s.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return nil, "", err
	}
	return s.aead.Seal(nonce, nonce, priv, []byte(kid)), EncryptionAESGCM, nil
}

// Open reverses Seal.
func (s *Sealer) Open(kid string, data []byte, encryption string) ([]byte, error) {
	switch encryption {
	case EncryptionNone:
		return data, nil
	case EncryptionAESGCM:
		if s.aead == nil {
			return nil, errors.New("signing key is encrypted but CRM_SECRET_KEY is not set")
		}
		n := s.aead.NonceSize()
		if len(data) < n {
			return nil, errors.New("signing key ciphertext too short")
		}
		out, err := s.aead.Open(nil, data[:n], data[n:], []byte(kid))
		if err != nil {
			return nil, errors.New("cannot decrypt signing key: wrong CRM_SECRET_KEY?")
		}
		return out, nil
	}
	return nil, fmt.Errorf("unknown signing key encryption %q", encryption)
}

// KeyPolicy decides how long a retired key stays published in the JWKS.
// The keys sign access tokens only (refresh tokens are opaque secrets), so
// a retired key is needed only while a token it signed can still be valid;
// publishing it longer would keep a key rotated away after a leak
// verifying for nothing.
type KeyPolicy struct {
	// RetiredFor publishes keys retired within RetiredFor; it must cover an
	// access token's lifetime, clock leeway, and the time other replicas
	// keep signing with the old key until they reload (see Keyring).
	RetiredFor time.Duration
}

// PolicyFor is the policy for access tokens living accessTTL: a retired key
// is published for accessTTL + auth.Leeway + 1 minute, then withdrawn. The
// minute covers another replica's keyring, which signs with the old key
// until its next reload (every 30 s).
func PolicyFor(accessTTL time.Duration) KeyPolicy {
	return KeyPolicy{RetiredFor: accessTTL + auth.Leeway + time.Minute}
}

// Keyring signs access tokens with the active key and serves the published
// public keys. It caches keys and reloads them periodically, so a rotation
// on one replica reaches the others within the reload interval (old keys
// stay published meanwhile, so nothing breaks in between).
type Keyring struct {
	store  SigningKeys
	sealer *Sealer
	policy KeyPolicy
	reload time.Duration

	mu        sync.Mutex
	activeKid string
	activeKey ed25519.PrivateKey
	public    map[string]ed25519.PublicKey
	jwks      auth.JWKSet
	loadedAt  time.Time
}

// NewKeyring creates the first key when none exists and loads the keys.
func NewKeyring(ctx context.Context, store SigningKeys, sealer *Sealer, policy KeyPolicy) (*Keyring, error) {
	k := &Keyring{store: store, sealer: sealer, policy: policy, reload: 30 * time.Second}
	sk, err := k.newKey()
	if err != nil {
		return nil, err
	}
	if err := store.EnsureActiveKey(ctx, sk); err != nil {
		return nil, fmt.Errorf("ensure signing key: %w", err)
	}
	if err := k.load(ctx); err != nil {
		return nil, err
	}
	return k, nil
}

func (k *Keyring) newKey() (StoredKey, error) {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return StoredKey{}, err
	}
	kid, err := randomSecret(12)
	if err != nil {
		return StoredKey{}, err
	}
	sealed, enc, err := k.sealer.Seal(kid, priv.Seed())
	if err != nil {
		return StoredKey{}, err
	}
	return StoredKey{Kid: kid, Public: pub, Private: sealed, Encryption: enc}, nil
}

// load reads the published keys; the caller need not hold mu.
func (k *Keyring) load(ctx context.Context) error {
	keys, err := k.store.PublishedKeys(ctx, k.policy)
	if err != nil {
		return fmt.Errorf("load signing keys: %w", err)
	}
	public := map[string]ed25519.PublicKey{}
	set := auth.JWKSet{Keys: []auth.JWK{}}
	var activeKid string
	var activeKey ed25519.PrivateKey
	for _, sk := range keys {
		public[sk.Kid] = sk.Public
		set.Keys = append(set.Keys, auth.PublicJWK(sk.Kid, sk.Public))
		if sk.RetiredAt == nil {
			seed, err := k.sealer.Open(sk.Kid, sk.Private, sk.Encryption)
			if err != nil {
				return fmt.Errorf("signing key %s: %w", sk.Kid, err)
			}
			if len(seed) != ed25519.SeedSize {
				return fmt.Errorf("signing key %s: bad seed length", sk.Kid)
			}
			activeKid, activeKey = sk.Kid, ed25519.NewKeyFromSeed(seed)
		}
	}
	if activeKey == nil {
		return errors.New("no active signing key")
	}
	k.mu.Lock()
	k.activeKid, k.activeKey, k.public, k.jwks, k.loadedAt = activeKid, activeKey, public, set, time.Now()
	k.mu.Unlock()
	return nil
}

// refresh reloads when the cache is older than maxAge. A failed reload
// keeps serving the cached keys: the database blipping must not stop
// token issuance or verification.
func (k *Keyring) refresh(ctx context.Context, maxAge time.Duration) {
	k.mu.Lock()
	stale := time.Since(k.loadedAt) > maxAge
	k.mu.Unlock()
	if stale {
		_ = k.load(ctx)
	}
}

// Sign mints a compact JWT of claims with the active key.
func (k *Keyring) Sign(ctx context.Context, claims auth.Claims) (string, error) {
	k.refresh(ctx, k.reload)
	k.mu.Lock()
	kid, key := k.activeKid, k.activeKey
	k.mu.Unlock()
	tok := jwt.NewWithClaims(jwt.SigningMethodEdDSA, claims)
	tok.Header["kid"] = kid
	return tok.SignedString(key)
}

// JWKS returns the published public keys.
func (k *Keyring) JWKS(ctx context.Context) auth.JWKSet {
	k.refresh(ctx, 5*time.Second)
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.jwks
}

// Key implements auth.KeySource for the service's own verifier. The keys
// are reloaded as often as for signing, so a retired key whose grace period
// ended stops verifying here within the reload interval even on a replica
// that signs nothing. An unknown kid (a key rotated on another replica)
// triggers a reload at most once a second, so forged kids cannot hammer the
// database.
func (k *Keyring) Key(ctx context.Context, kid string) (ed25519.PublicKey, error) {
	k.refresh(ctx, k.reload)
	k.mu.Lock()
	pub, ok := k.public[kid]
	k.mu.Unlock()
	if ok {
		return pub, nil
	}
	k.refresh(ctx, time.Second)
	k.mu.Lock()
	defer k.mu.Unlock()
	if pub, ok := k.public[kid]; ok {
		return pub, nil
	}
	return nil, auth.ErrUnknownKey
}

// Rotate makes a fresh key the active one; the previous keys stay
// published per the policy. It returns the new kid.
func (k *Keyring) Rotate(ctx context.Context) (string, error) {
	sk, err := k.newKey()
	if err != nil {
		return "", err
	}
	if err := k.store.RotateKey(ctx, sk); err != nil {
		return "", fmt.Errorf("rotate signing key: %w", err)
	}
	if err := k.load(ctx); err != nil {
		return "", err
	}
	return sk.Kid, nil
}
