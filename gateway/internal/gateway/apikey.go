package gateway

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/opencrm/crm/pkg/auth"
	"github.com/opencrm/crm/pkg/problem"
)

// maxKeyCacheEntries bounds the verdict cache; a flood of random keys can
// only make the cache start over, never grow without limit.
const maxKeyCacheEntries = 10_000

// maxAPIKeyBytes refuses absurd keys before asking identity.
const maxAPIKeyBytes = 256

// APIKey is identity's answer for a valid key.
type APIKey struct {
	ID                 int64    `json:"id"`
	Name               string   `json:"name"`
	Prefix             string   `json:"prefix"`
	RateLimitPerMinute int      `json:"rate_limit_per_minute"`
	AllowedOrigins     []string `json:"allowed_origins"`
}

type keyVerdict struct {
	key     *APIKey // nil: unknown or revoked
	expires time.Time
}

// KeyVerifier checks X-API-Key values with identity
// (POST /internal/api-keys/verify) and caches each verdict, positive or
// negative, for at most TTL: a revoked key stops working within TTL, and
// repeated bad keys do not each cost a call to identity.
type KeyVerifier struct {
	url    string
	secret string
	client *http.Client
	ttl    time.Duration
	now    func() time.Time

	mu    sync.Mutex
	cache map[[32]byte]keyVerdict
	group singleflight.Group
}

// NewKeyVerifier asks identity at identityURL with the internal secret.
func NewKeyVerifier(identityURL, secret string, ttl time.Duration) *KeyVerifier {
	return &KeyVerifier{
		url: identityURL + "/internal/api-keys/verify", secret: secret,
		client: &http.Client{Timeout: 5 * time.Second}, ttl: ttl, now: time.Now,
		cache: map[[32]byte]keyVerdict{},
	}
}

// Verify returns the key's record, a 401 problem for a bad key, or a 503
// problem when identity cannot answer.
func (v *KeyVerifier) Verify(ctx context.Context, key string) (*APIKey, error) {
	if key == "" {
		return nil, keyProblem("missing API key: send it in the X-API-Key header")
	}
	if len(key) > maxAPIKeyBytes {
		return nil, keyProblem("invalid API key")
	}
	h := sha256.Sum256([]byte(key))
	now := v.now()
	v.mu.Lock()
	verdict, ok := v.cache[h]
	v.mu.Unlock()
	if !ok || !now.Before(verdict.expires) {
		// When a busy key's entry expires, every request in flight misses at
		// once; one question to identity answers them all, instead of a
		// burst that could time out and turn into 503s.
		res, err, _ := v.group.Do(string(h[:]), func() (any, error) {
			k, err := v.ask(context.WithoutCancel(ctx), key)
			if err != nil {
				return keyVerdict{}, err
			}
			fresh := keyVerdict{key: k, expires: v.now().Add(v.ttl)}
			v.mu.Lock()
			if len(v.cache) >= maxKeyCacheEntries {
				clear(v.cache)
			}
			v.cache[h] = fresh
			v.mu.Unlock()
			return fresh, nil
		})
		if err != nil {
			return nil, err
		}
		verdict = res.(keyVerdict)
	}
	if verdict.key == nil {
		return nil, keyProblem("invalid or revoked API key")
	}
	return verdict.key, nil
}

// ask returns (nil, nil) for a key identity refuses.
func (v *KeyVerifier) ask(ctx context.Context, key string) (*APIKey, error) {
	body, err := json.Marshal(map[string]string{"key": key})
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, v.url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(auth.InternalHeader, v.secret)
	if id := problem.RequestID(ctx); id != "" {
		req.Header.Set("X-Request-Id", id)
	}
	resp, err := v.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", problem.Unavailable("API key verification is unavailable", 5), err)
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusOK:
		var out struct {
			Data APIKey `json:"data"`
		}
		if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<10)).Decode(&out); err != nil {
			return nil, fmt.Errorf("%w: decode verify answer: %v", problem.BadGateway("API key verification failed"), err)
		}
		return &out.Data, nil
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusNotFound:
		return nil, nil
	default:
		return nil, fmt.Errorf("%w: identity answered %d", problem.Unavailable("API key verification is unavailable", 5), resp.StatusCode)
	}
}

// keyProblem is the 401 of the key-authenticated routes; its challenge
// names the header to use rather than a bearer scheme.
func keyProblem(detail string) *problem.Error {
	p := problem.Unauthenticated(detail)
	p.Header = http.Header{"Www-Authenticate": {`APIKey realm="crm-public", header="X-API-Key"`}}
	return p
}
