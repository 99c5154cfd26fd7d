package mail

import (
	"errors"

	"github.com/opencrm/crm/pkg/sealbox"
)

// hkdfInfo binds the derived key to this one purpose: the same
// CRM_SECRET_KEY feeds other services' keys, which must differ. It is the
// purpose every stored mailbox password was sealed under; it never changes.
const hkdfInfo = "opencrm/mail/mailbox-password/v1"

// Sealer encrypts mailbox passwords at rest (pkg/sealbox: AES-256-GCM
// under a key derived from CRM_SECRET_KEY with HKDF-SHA256).
type Sealer struct{ box *sealbox.Box }

// NewSealer derives the key from secret (at least 16 characters).
func NewSealer(secret string) (*Sealer, error) {
	if len(secret) < sealbox.MinSecret {
		return nil, errors.New("mail: CRM_SECRET_KEY must be at least 16 characters")
	}
	box, err := sealbox.New(secret, hkdfInfo)
	if err != nil {
		return nil, err
	}
	return &Sealer{box: box}, nil
}

// Seal returns version || nonce || ciphertext.
func (s *Sealer) Seal(plaintext string) ([]byte, error) {
	return s.box.Seal([]byte(plaintext))
}

// ErrUnseal is a sealed value that cannot be opened: another key, or a
// corrupted row. The mailbox then needs its password set again.
var ErrUnseal = errors.New("stored password cannot be decrypted (was CRM_SECRET_KEY changed?); set the password again")

// Open reverses Seal.
func (s *Sealer) Open(sealed []byte) (string, error) {
	pt, err := s.box.Open(sealed)
	if err != nil {
		return "", ErrUnseal
	}
	return string(pt), nil
}
