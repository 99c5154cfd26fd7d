package mail

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
)

// sealVersion prefixes every sealed value, so the scheme can change later
// without guessing what an old row holds.
const sealVersion = 1

// hkdfInfo binds the derived key to this one purpose: the same
// CRM_SECRET_KEY feeds other services' keys, which must differ.
const hkdfInfo = "opencrm/mail/mailbox-password/v1"

// Sealer encrypts mailbox passwords at rest with AES-256-GCM under a key
// derived from CRM_SECRET_KEY with HKDF-SHA256.
type Sealer struct{ aead cipher.AEAD }

// NewSealer derives the key from secret (at least 16 characters).
func NewSealer(secret string) (*Sealer, error) {
	if len(secret) < 16 {
		return nil, errors.New("mail: CRM_SECRET_KEY must be at least 16 characters")
	}
	key, err := hkdf.Key(sha256.New, []byte(secret), nil, hkdfInfo, 32)
	if err != nil {
		return nil, fmt.Errorf("mail: derive key: %w", err)
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("mail: cipher: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("mail: gcm: %w", err)
	}
	return &Sealer{aead: aead}, nil
}

// Seal returns version || nonce || ciphertext.
func (s *Sealer) Seal(plaintext string) ([]byte, error) {
	nonce := make([]byte, s.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return nil, fmt.Errorf("mail: nonce: %w", err)
	}
	out := append([]byte{sealVersion}, nonce...)
	return s.aead.Seal(out, nonce, []byte(plaintext), []byte(hkdfInfo)), nil
}

// ErrUnseal is a sealed value that cannot be opened: another key, or a
// corrupted row. The mailbox then needs its password set again.
var ErrUnseal = errors.New("stored password cannot be decrypted (was CRM_SECRET_KEY changed?); set the password again")

// Open reverses Seal.
func (s *Sealer) Open(sealed []byte) (string, error) {
	ns := s.aead.NonceSize()
	if len(sealed) < 1+ns || sealed[0] != sealVersion {
		return "", ErrUnseal
	}
	pt, err := s.aead.Open(nil, sealed[1:1+ns], sealed[1+ns:], []byte(hkdfInfo))
	if err != nil {
		return "", ErrUnseal
	}
	return string(pt), nil
}
