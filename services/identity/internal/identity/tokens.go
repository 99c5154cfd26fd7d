package identity

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"strings"
)

// APIKeyPrefix marks a live API key, so leaked keys are recognisable by
// secret scanners.
const APIKeyPrefix = "crm_live_"

// APIKeyDisplayLength is how much of a key is stored in clear, to tell keys
// apart in listings without revealing them.
const APIKeyDisplayLength = 12

// maxSecretLength bounds tokens and keys accepted from clients before any
// hashing work.
const maxSecretLength = 512

// randomSecret returns n random bytes encoded base64url without padding.
func randomSecret(n int) (string, error) {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// HashSecret is the stored form of a refresh token or API key. Both are
// 256-bit random values, so a fast unsalted hash is enough: nothing can be
// guessed from it, and lookups by hash stay indexable.
func HashSecret(s string) []byte {
	h := sha256.Sum256([]byte(s))
	return h[:]
}

// newAPIKeySecret returns a fresh key, its display prefix and its hash.
func newAPIKeySecret() (secret, prefix string, hash []byte, err error) {
	r, err := randomSecret(32)
	if err != nil {
		return "", "", nil, err
	}
	secret = APIKeyPrefix + r
	return secret, secret[:APIKeyDisplayLength], HashSecret(secret), nil
}

// plausibleAPIKey rejects values that cannot be keys before touching storage.
func plausibleAPIKey(s string) bool {
	return strings.HasPrefix(s, APIKeyPrefix) && len(s) <= maxSecretLength
}
