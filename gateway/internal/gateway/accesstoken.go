package gateway

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/opencrm/crm/pkg/auth"
	"github.com/opencrm/crm/pkg/contract/identityapi"
	"github.com/opencrm/crm/pkg/problem"
)

// AccessTokenPrefix marks an integration token in a bearer header; any
// other bearer value is verified as a JWT.
const AccessTokenPrefix = "crm_pat_"

// maxAccessTokenBytes refuses absurd tokens before asking identity (a real
// one is 51 bytes).
const maxAccessTokenBytes = 128

// TokenGrant is identity's answer for a valid integration token: its
// service user, role and scopes, and a short-lived access token minted for
// that user, which the gateway forwards in place of the secret so every
// service verifies the caller as it verifies any access token.
type TokenGrant struct {
	ID          int64    `json:"id"`
	UserID      int64    `json:"user_id"`
	Role        string   `json:"role"`
	Scopes      []string `json:"scopes"`
	AccessToken string   `json:"access_token"`
	ExpiresIn   int      `json:"expires_in"`
}

// maxTokenCacheEntries bounds the verdict cache; a flood of random tokens
// can only make the cache start over, never grow without limit.
const maxTokenCacheEntries = 10_000

type tokenVerdict struct {
	grant   *TokenGrant // nil: unknown, revoked or expired
	expires time.Time
}

// TokenVerifier checks integration tokens with identity
// (POST /internal/access-tokens/verify) and caches each verdict, positive
// or negative, for at most TTL, as KeyVerifier does for API keys: a revoked
// or expired token stops working within TTL, and a busy token costs one
// call to identity per TTL. A positive verdict is never kept past the
// minted access token's own expiry.
type TokenVerifier struct {
	url    string
	secret string
	client *http.Client
	ttl    time.Duration
	now    func() time.Time

	mu    sync.Mutex
	cache map[[32]byte]tokenVerdict
	group singleflight.Group
}

// NewTokenVerifier asks identity at identityURL with the internal secret.
func NewTokenVerifier(identityURL, secret string, ttl time.Duration) *TokenVerifier {
	return &TokenVerifier{
		url: identityURL + identityapi.PathVerifyAccessToken, secret: secret,
		client: &http.Client{Timeout: 5 * time.Second}, ttl: ttl, now: time.Now,
		cache: map[[32]byte]tokenVerdict{},
	}
}

// plausibleToken rejects, without a call to identity, values that cannot
// be tokens: too long, or outside the base64url alphabet.
func plausibleToken(tok string) bool {
	if len(tok) > maxAccessTokenBytes || len(tok) <= len(AccessTokenPrefix) {
		return false
	}
	for _, r := range tok[len(AccessTokenPrefix):] {
		if !(r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return false
		}
	}
	return true
}

// Verify returns the token's grant, a 401 problem for a bad token, or a
// 503 problem when identity cannot answer.
func (v *TokenVerifier) Verify(ctx context.Context, tok string) (*TokenGrant, error) {
	if !plausibleToken(tok) {
		return nil, problem.Unauthenticated("invalid access token")
	}
	h := sha256.Sum256([]byte(tok))
	now := v.now()
	v.mu.Lock()
	verdict, ok := v.cache[h]
	v.mu.Unlock()
	if !ok || !now.Before(verdict.expires) {
		res, err, _ := v.group.Do(string(h[:]), func() (any, error) {
			g, err := v.ask(context.WithoutCancel(ctx), tok)
			if err != nil {
				return tokenVerdict{}, err
			}
			at := v.now()
			fresh := tokenVerdict{grant: g, expires: at.Add(v.ttl)}
			if g != nil {
				// Keep a margin so a cached access token is never
				// forwarded in its last seconds.
				if limit := at.Add(time.Duration(g.ExpiresIn)*time.Second - 2*time.Second); limit.Before(fresh.expires) {
					fresh.expires = limit
				}
			}
			v.mu.Lock()
			if len(v.cache) >= maxTokenCacheEntries {
				clear(v.cache)
			}
			v.cache[h] = fresh
			v.mu.Unlock()
			return fresh, nil
		})
		if err != nil {
			return nil, err
		}
		verdict = res.(tokenVerdict)
	}
	if verdict.grant == nil {
		return nil, problem.Unauthenticated("invalid, revoked or expired access token")
	}
	return verdict.grant, nil
}

// ask returns (nil, nil) for a token identity refuses.
func (v *TokenVerifier) ask(ctx context.Context, tok string) (*TokenGrant, error) {
	body, err := json.Marshal(map[string]string{"token": tok})
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
		return nil, fmt.Errorf("%w: %v", problem.Unavailable("access token verification is unavailable", 5), err)
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusOK:
		var out struct {
			Data TokenGrant `json:"data"`
		}
		if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<10)).Decode(&out); err != nil {
			return nil, fmt.Errorf("%w: decode verify answer: %v", problem.BadGateway("access token verification failed"), err)
		}
		if out.Data.AccessToken == "" || out.Data.UserID <= 0 {
			return nil, fmt.Errorf("%w: verify answer without an access token", problem.BadGateway("access token verification failed"))
		}
		return &out.Data, nil
	case http.StatusUnauthorized, http.StatusNotFound:
		return nil, nil
	default:
		return nil, fmt.Errorf("%w: identity answered %d", problem.Unavailable("access token verification is unavailable", 5), resp.StatusCode)
	}
}

// insufficientScope is the RFC 6750 answer to a token lacking the route's
// scope.
func insufficientScope(scope string) *problem.Error {
	return &problem.Error{
		Status: http.StatusForbidden, Code: "insufficient_scope", Title: http.StatusText(http.StatusForbidden),
		Detail: "this access token lacks the " + scope + " scope",
		Header: http.Header{"Www-Authenticate": {`Bearer error="insufficient_scope", scope="` + scope + `"`}},
	}
}

// isAccessToken reports a bearer value that is an integration token.
func isAccessToken(tok string) bool { return strings.HasPrefix(tok, AccessTokenPrefix) }
