package identity

import (
	"context"
	"crypto/subtle"
	"errors"
	"net/url"
	"strings"

	"github.com/opencrm/crm/pkg/contract/identityapi"
	"github.com/opencrm/crm/pkg/validate"
)

// Limits of API key settings.
const (
	DefaultKeyRateLimit = 60
	MaxKeyRateLimit     = 100_000
	MaxAllowedOrigins   = 50
)

// APIKeyInput asks for a new API key: the body of CreateAPIKey, decoded
// into the contract's type.
type APIKeyInput = identityapi.APIKeyInput

// CreateAPIKey stores a new key and returns it with its secret, which is
// never retrievable again.
func (s *Service) CreateAPIKey(ctx context.Context, in APIKeyInput, createdBy int64) (APIKey, string, error) {
	in.Name = strings.TrimSpace(in.Name)
	var v validate.Errors
	checkName(&v, in.Name)
	limit := DefaultKeyRateLimit
	if in.RateLimitPerMinute != nil {
		limit = *in.RateLimitPerMinute
		if limit < 1 || limit > MaxKeyRateLimit {
			v.Add("rate_limit_per_minute", "must be between 1 and %d", MaxKeyRateLimit)
		}
	}
	origins := []string{}
	if len(in.AllowedOrigins) > MaxAllowedOrigins {
		v.Add("allowed_origins", "must hold at most %d origins", MaxAllowedOrigins)
	} else {
		for _, o := range in.AllowedOrigins {
			norm, ok := normalizeOrigin(o)
			if !ok {
				v.Add("allowed_origins", "%q is not an origin such as https://example.com", o)
				break
			}
			origins = append(origins, norm)
		}
	}
	if err := v.Err(); err != nil {
		return APIKey{}, "", err
	}
	secret, prefix, hash, err := newAPIKeySecret()
	if err != nil {
		return APIKey{}, "", err
	}
	var by *int64
	if createdBy > 0 {
		by = &createdBy
	}
	k, err := s.store.CreateAPIKey(ctx, NewAPIKey{Name: in.Name, Prefix: prefix, Hash: hash,
		RateLimitPerMinute: limit, AllowedOrigins: origins, CreatedBy: by})
	return k, secret, err
}

// normalizeOrigin accepts scheme://host[:port] (lower-cased, no path).
func normalizeOrigin(o string) (string, bool) {
	o = strings.TrimSpace(o)
	if len(o) > validate.MaxString {
		return "", false
	}
	u, err := url.Parse(o)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" ||
		(u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return "", false
	}
	return strings.ToLower(u.Scheme + "://" + u.Host), true
}

// APIKeys lists keys without secrets.
func (s *Service) APIKeys(ctx context.Context) ([]APIKey, error) { return s.store.ListAPIKeys(ctx) }

// RevokeAPIKey revokes a key.
func (s *Service) RevokeAPIKey(ctx context.Context, id int64) error {
	return s.store.RevokeAPIKey(ctx, id)
}

// VerifyAPIKey returns the active key matching secret, or ErrInvalidAPIKey.
func (s *Service) VerifyAPIKey(ctx context.Context, secret string) (APIKey, error) {
	if !plausibleAPIKey(secret) {
		return APIKey{}, ErrInvalidAPIKey
	}
	want := HashSecret(secret)
	k, stored, err := s.store.ActiveAPIKeyByHash(ctx, want)
	if errors.Is(err, ErrAPIKeyNotFound) {
		return APIKey{}, ErrInvalidAPIKey
	}
	if err != nil {
		return APIKey{}, err
	}
	if subtle.ConstantTimeCompare(stored, want) != 1 {
		return APIKey{}, ErrInvalidAPIKey
	}
	return k, nil
}
