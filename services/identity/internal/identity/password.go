package identity

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"

	"golang.org/x/crypto/argon2"
)

// MinPasswordLength is the shortest password accepted.
const MinPasswordLength = 10

// MaxPasswordLength bounds the work one request can ask of the hasher.
const MaxPasswordLength = 256

// Argon2Params are argon2id cost parameters.
type Argon2Params struct {
	MemoryKiB   uint32
	Iterations  uint32
	Parallelism uint8
}

// DefaultArgon2 follows the OWASP recommendation for argon2id (19 MiB,
// 2 iterations, 1 lane): tens of milliseconds per hash on one core.
var DefaultArgon2 = Argon2Params{MemoryKiB: 19 * 1024, Iterations: 2, Parallelism: 1}

// Hasher hashes passwords with argon2id into PHC strings
// ($argon2id$v=19$m=...,t=...,p=...$salt$hash). Verification reads the
// parameters from the string, so raising the cost later keeps old hashes
// valid. A semaphore bounds concurrent hashes: each holds MemoryKiB of RAM,
// and a login flood must not exhaust memory.
type Hasher struct {
	params Argon2Params
	sem    chan struct{}
	dummy  string
}

// NewHasher returns a hasher running at most concurrency hashes at once.
func NewHasher(p Argon2Params, concurrency int) (*Hasher, error) {
	if p.MemoryKiB < 8 || p.Iterations < 1 || p.Parallelism < 1 {
		return nil, errors.New("identity: invalid argon2 parameters")
	}
	if concurrency < 1 {
		concurrency = 1
	}
	h := &Hasher{params: p, sem: make(chan struct{}, concurrency)}
	d, err := h.Hash(context.Background(), "dummy password for unknown accounts")
	if err != nil {
		return nil, err
	}
	h.dummy = d
	return h, nil
}

func (h *Hasher) acquire(ctx context.Context) error {
	select {
	case h.sem <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (h *Hasher) release() { <-h.sem }

// Hash returns the PHC encoding of password with a fresh salt.
func (h *Hasher) Hash(ctx context.Context, password string) (string, error) {
	salt := make([]byte, 16)
	if _, err := rand.Read(salt); err != nil {
		return "", err
	}
	if err := h.acquire(ctx); err != nil {
		return "", err
	}
	defer h.release()
	p := h.params
	key := argon2.IDKey([]byte(password), salt, p.Iterations, p.MemoryKiB, p.Parallelism, 32)
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s", argon2.Version, p.MemoryKiB, p.Iterations,
		p.Parallelism, base64.RawStdEncoding.EncodeToString(salt), base64.RawStdEncoding.EncodeToString(key)), nil
}

// Verify reports whether password matches the PHC string encoded.
func (h *Hasher) Verify(ctx context.Context, password, encoded string) (bool, error) {
	parts := strings.Split(encoded, "$")
	if len(parts) != 6 || parts[1] != "argon2id" {
		return false, errors.New("identity: unsupported password hash")
	}
	var version int
	if _, err := fmt.Sscanf(parts[2], "v=%d", &version); err != nil || version != argon2.Version {
		return false, errors.New("identity: unsupported argon2 version")
	}
	var p Argon2Params
	if _, err := fmt.Sscanf(parts[3], "m=%d,t=%d,p=%d", &p.MemoryKiB, &p.Iterations, &p.Parallelism); err != nil {
		return false, fmt.Errorf("identity: bad argon2 parameters: %w", err)
	}
	if p.MemoryKiB > 1<<20 || p.Iterations > 64 || p.Parallelism < 1 {
		return false, errors.New("identity: argon2 parameters out of range")
	}
	salt, err := base64.RawStdEncoding.DecodeString(parts[4])
	if err != nil {
		return false, fmt.Errorf("identity: bad salt: %w", err)
	}
	want, err := base64.RawStdEncoding.DecodeString(parts[5])
	if err != nil || len(want) == 0 {
		return false, errors.New("identity: bad argon2 hash")
	}
	if err := h.acquire(ctx); err != nil {
		return false, err
	}
	defer h.release()
	got := argon2.IDKey([]byte(password), salt, p.Iterations, p.MemoryKiB, p.Parallelism, uint32(len(want)))
	return subtle.ConstantTimeCompare(got, want) == 1, nil
}

// Burn verifies password against a dummy hash, so a login for an unknown
// email costs the same time as one for a known email.
func (h *Hasher) Burn(ctx context.Context, password string) {
	_, _ = h.Verify(ctx, password, h.dummy)
}
