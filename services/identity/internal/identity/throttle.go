package identity

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/opencrm/crm/pkg/fault"
)

// KnownAddressTTL is how long an address a user logged in from stays
// exempt from the per-account cap: a distributed guesser can then block an
// account only for addresses its owner has not used for a month.
const KnownAddressTTL = 30 * 24 * time.Hour

// Limits are the login attempts allowed per throttle window (0 disables a
// count): per (email, IP) the owner's own typos, per email across IPs a
// distributed guesser, per IP across emails a password sprayer.
type Limits struct {
	PerEmailIP int
	PerEmail   int
	PerIP      int
}

// throttled is a refused login attempt: the caller may retry after wait,
// rounded up to whole seconds so a retry at that hint is never early.
func throttled(wait time.Duration) error {
	return fault.RateLimited(int(math.Ceil(wait.Seconds())), "too many requests, retry later")
}

func (l Limits) enabled() bool { return l.PerEmailIP > 0 || l.PerEmail > 0 || l.PerIP > 0 }

func hashKey(kind string, parts ...string) string {
	h := sha256.Sum256([]byte(kind + "\x00" + strings.Join(parts, "\x00")))
	return hex.EncodeToString(h[:16])
}

// loginKeys are the throttle keys of one attempt. The pair key keeps its
// earlier form, so counts survive a rolling deploy.
type loginKeys struct{ pair, email, ip string }

func keysFor(email, ip string) loginKeys {
	email = strings.ToLower(strings.TrimSpace(email))
	pair := sha256.Sum256([]byte(email + "\x00" + ip))
	return loginKeys{pair: hex.EncodeToString(pair[:16]), email: hashKey("email", email), ip: hashKey("ip", ip)}
}

// admit counts an attempt under every applicable key and refuses it (a
// rate-limited fault with the longest wait) when any count is beyond its
// limit. The per-email count is skipped from an address the account logged
// in from before. It reports whether the email count applied, for settle.
func (s *Service) admit(ctx context.Context, k loginKeys) (bool, error) {
	l := s.cfg.Limits
	emailCounted := l.PerEmail > 0
	if emailCounted {
		known, err := s.throttle.Known(ctx, k.pair)
		if err != nil {
			return false, fmt.Errorf("login throttle: %w", err)
		}
		emailCounted = !known
	}
	var wait time.Duration
	for _, c := range []struct {
		key   string
		limit int
		on    bool
	}{{k.pair, l.PerEmailIP, l.PerEmailIP > 0}, {k.email, l.PerEmail, emailCounted}, {k.ip, l.PerIP, l.PerIP > 0}} {
		if !c.on {
			continue
		}
		w, blocked, err := s.throttle.Take(ctx, c.key, c.limit)
		if err != nil {
			return false, fmt.Errorf("login throttle: %w", err)
		}
		if blocked {
			wait = max(wait, w)
		}
	}
	if wait > 0 {
		return false, throttled(wait)
	}
	return emailCounted, nil
}

// settle records a successful login: the pair's failures are forgotten,
// the attempt is taken back from the email and IP counts (other failures
// there stay: a success proves nothing about them), and the address
// becomes known for the account.
func (s *Service) settle(ctx context.Context, k loginKeys, emailCounted bool) {
	l := s.cfg.Limits
	var errs []error
	if l.PerEmailIP > 0 {
		errs = append(errs, s.throttle.Reset(ctx, k.pair))
	}
	if emailCounted {
		errs = append(errs, s.throttle.Forgive(ctx, k.email))
	}
	if l.PerIP > 0 {
		errs = append(errs, s.throttle.Forgive(ctx, k.ip))
	}
	if l.PerEmail > 0 {
		errs = append(errs, s.throttle.Remember(ctx, k.pair, KnownAddressTTL))
	}
	for _, err := range errs {
		if err != nil {
			s.log.WarnContext(ctx, "cannot settle login throttle", "error", err.Error())
			return
		}
	}
}
