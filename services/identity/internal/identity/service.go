package identity

import (
	"context"
	"errors"
	"log/slog"
	"time"
)

// Config holds the session rules.
type Config struct {
	// AccessTTL is an access token's lifetime (expires_in).
	AccessTTL time.Duration
	// RefreshTTL is a refresh token's lifetime; each rotation starts a new one.
	RefreshTTL time.Duration
	// Limits are the login attempts allowed per throttle window.
	Limits Limits
}

// Service implements the identity use cases.
type Service struct {
	store    Store
	hasher   *Hasher
	keys     *Keyring
	throttle Throttle
	cfg      Config
	log      *slog.Logger
	now      func() time.Time
}

// NewService wires the use cases.
func NewService(store Store, hasher *Hasher, keys *Keyring, throttle Throttle, cfg Config, log *slog.Logger) (*Service, error) {
	if store == nil || hasher == nil || keys == nil || throttle == nil || log == nil {
		return nil, errors.New("identity: service needs store, hasher, keys, throttle and logger")
	}
	if cfg.AccessTTL <= 0 || cfg.RefreshTTL <= 0 {
		return nil, errors.New("identity: token lifetimes must be positive")
	}
	return &Service{store: store, hasher: hasher, keys: keys, throttle: throttle, cfg: cfg, log: log, now: time.Now}, nil
}

// Keys exposes the keyring (JWKS, verification, rotation).
func (s *Service) Keys() *Keyring { return s.keys }

// RotateKeys makes a new signing key active.
func (s *Service) RotateKeys(ctx context.Context) (string, error) {
	return s.keys.Rotate(ctx)
}
