// Package sealbox encrypts small secrets at rest (mailbox passwords,
// webhook signing secrets) with AES-256-GCM under a key derived from
// CRM_SECRET_KEY with HKDF-SHA256. Each use names its purpose: the derived
// keys differ, so a value sealed for one purpose never opens for another.
package sealbox

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
)

// version prefixes every sealed value, so the scheme can change later
// without guessing what an old row holds.
const version = 1

// MinSecret is the shortest CRM_SECRET_KEY accepted.
const MinSecret = 16

// ErrShortSecret is a secret shorter than MinSecret.
var ErrShortSecret = errors.New("sealbox: the secret must be at least 16 characters")

// ErrOpen is a sealed value that cannot be opened: another key or purpose,
// or a corrupted value.
var ErrOpen = errors.New("sealbox: sealed value cannot be opened")

// Box seals and opens values for one purpose.
type Box struct {
	aead    cipher.AEAD
	purpose []byte
}

// New derives the key of purpose (the HKDF info, also the additional
// authenticated data) from secret.
func New(secret, purpose string) (*Box, error) {
	if len(secret) < MinSecret {
		return nil, ErrShortSecret
	}
	if purpose == "" {
		return nil, errors.New("sealbox: a purpose is required")
	}
	key, err := hkdf.Key(sha256.New, []byte(secret), nil, purpose, 32)
	if err != nil {
		return nil, fmt.Errorf("sealbox: derive key: %w", err)
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("sealbox: cipher: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("sealbox: gcm: %w", err)
	}
	return &Box{aead: aead, purpose: []byte(purpose)}, nil
}

// Seal returns version || nonce || ciphertext.
func (b *Box) Seal(plaintext []byte) ([]byte, error) {
	nonce := make([]byte, b.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return nil, fmt.Errorf("sealbox: nonce: %w", err)
	}
	out := append([]byte{version}, nonce...)
	return b.aead.Seal(out, nonce, plaintext, b.purpose), nil
}

// Open reverses Seal; anything else is ErrOpen.
func (b *Box) Open(sealed []byte) ([]byte, error) {
	ns := b.aead.NonceSize()
	if len(sealed) < 1+ns || sealed[0] != version {
		return nil, ErrOpen
	}
	pt, err := b.aead.Open(nil, sealed[1:1+ns], sealed[1+ns:], b.purpose)
	if err != nil {
		return nil, ErrOpen
	}
	return pt, nil
}
