// Package apikey verifies API key secrets with identity
// (POST /internal/api-keys/verify) and caches each answer for a few
// seconds, so a burst of submissions costs identity one call per key while
// a revoked key is still refused within the cache's lifetime (≤ 5 s).
package apikey

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/opencrm/crm/pkg/auth"
	"github.com/opencrm/crm/pkg/httpx"
	"github.com/opencrm/crm/pkg/problem"
	"github.com/opencrm/crm/pkg/svcclient"
	"github.com/opencrm/crm/services/intake/internal/intake"
)

// MaxTTL is the longest a verify answer may be reused: DESIGN 4 promises a
// revoked key is refused everywhere within 5 s.
const MaxTTL = 5 * time.Second

// MaxKeyLength rejects absurd header values before any work.
const MaxKeyLength = 256

// maxEntries bounds the cache; past it, the cache is cleared (a flood of
// random keys must not grow memory).
const maxEntries = 10_000

// ErrInvalid is the 401 for a missing, unknown or revoked key.
func ErrInvalid() *problem.Error {
	e := problem.Unauthenticated("missing, unknown or revoked API key")
	e.Header = http.Header{"Www-Authenticate": {`ApiKey realm="crm", header="X-API-Key"`}}
	return e
}

type entry struct {
	key     intake.Key
	err     error
	expires time.Time
}

// Verifier implements intake.Keys.
type Verifier struct {
	client *svcclient.Client
	ttl    time.Duration
	now    func() time.Time

	mu    sync.Mutex
	cache map[[32]byte]entry
	group singleflight.Group
}

// New verifies against identity through client, caching for ttl (at most MaxTTL).
func New(client *svcclient.Client, ttl time.Duration) (*Verifier, error) {
	if client == nil || client.HTTP == nil {
		return nil, errors.New("apikey: needs an identity client")
	}
	if ttl < 0 || ttl > MaxTTL {
		return nil, fmt.Errorf("apikey: cache ttl must be between 0 and %s", MaxTTL)
	}
	return &Verifier{client: client, ttl: ttl, now: time.Now, cache: map[[32]byte]entry{}}, nil
}

var _ intake.Keys = (*Verifier)(nil)

// Verify implements intake.Keys. Unknown keys are cached too, so guessing
// keys does not turn into load on identity; identity failures are not.
func (v *Verifier) Verify(ctx context.Context, secret string) (intake.Key, error) {
	if secret == "" || len(secret) > MaxKeyLength || strings.ContainsAny(secret, " \t\r\n") {
		return intake.Key{}, ErrInvalid()
	}
	id := sha256.Sum256([]byte(secret))
	now := v.now()
	v.mu.Lock()
	e, ok := v.cache[id]
	v.mu.Unlock()
	if ok && now.Before(e.expires) {
		return e.key, e.err
	}
	res, err, _ := v.group.Do(string(id[:]), func() (any, error) {
		k, err := v.call(context.WithoutCancel(ctx), secret)
		var p *problem.Error
		if err == nil || (errors.As(err, &p) && p.Status == http.StatusUnauthorized) {
			v.mu.Lock()
			if len(v.cache) >= maxEntries {
				clear(v.cache)
			}
			v.cache[id] = entry{key: k, err: err, expires: v.now().Add(v.ttl)}
			v.mu.Unlock()
		}
		return k, err
	})
	k, _ := res.(intake.Key)
	return k, err
}

// call asks identity. svcclient.Do reports every 401 as a 502, so this
// call is made by hand with the client's settings (secret, timeout).
func (v *Verifier) call(ctx context.Context, secret string) (intake.Key, error) {
	body, _ := json.Marshal(map[string]string{"key": secret})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, v.client.BaseURL+"/internal/api-keys/verify", bytes.NewReader(body))
	if err != nil {
		return intake.Key{}, fmt.Errorf("identity: %w", err)
	}
	req.Header.Set(auth.InternalHeader, v.client.Secret)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	if rid := problem.RequestID(ctx); rid != "" {
		req.Header.Set(httpx.RequestIDHeader, rid)
	}
	resp, err := v.client.HTTP.Do(req)
	if err != nil {
		return intake.Key{}, fmt.Errorf("identity: %v: %w", err, problem.Unavailable("identity is unavailable", 5))
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return intake.Key{}, fmt.Errorf("identity: %v: %w", err, problem.Unavailable("identity is unavailable", 5))
	}
	switch {
	case resp.StatusCode == http.StatusOK:
		var out struct {
			Data intake.Key `json:"data"`
		}
		if err := json.Unmarshal(raw, &out); err != nil || out.Data.ID <= 0 {
			return intake.Key{}, fmt.Errorf("identity: unreadable verify answer: %w", problem.BadGateway("identity answered with an unreadable body"))
		}
		return out.Data, nil
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusNotFound:
		return intake.Key{}, ErrInvalid()
	case resp.StatusCode == http.StatusServiceUnavailable || resp.StatusCode == http.StatusTooManyRequests:
		return intake.Key{}, problem.Unavailable("identity is unavailable", 5)
	case resp.StatusCode == http.StatusGatewayTimeout:
		return intake.Key{}, problem.Timeout("identity did not answer in time")
	default:
		return intake.Key{}, fmt.Errorf("identity answered %d: %w", resp.StatusCode, problem.BadGateway("identity failed"))
	}
}
