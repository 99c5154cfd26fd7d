package gateway

import (
	"fmt"
	"net/netip"
	"strings"
	"time"

	"github.com/opencrm/crm/pkg/auth"
	"github.com/opencrm/crm/pkg/config"
	"github.com/opencrm/crm/pkg/httpx"
	"github.com/opencrm/crm/pkg/tracing"
)

// Config is everything the gateway reads from the environment, validated
// once at start-up.
type Config struct {
	// Addr is the listen address (ADDR, default :8080).
	Addr string
	// OpsAddr is the ops listener, /metrics, /healthz and /readyz
	// (OPS_ADDR, default :9080); /metrics is not on Addr.
	OpsAddr string
	// Tracing is the OpenTelemetry exporter setting (off when unset).
	Tracing tracing.Config
	// RedisURL is where rate-limit counters live (REDIS_URL).
	RedisURL string
	// QueuesRedisURL is the Redis of the asynq queues the queues UI shows
	// (CRM_QUEUES_REDIS_URL, default REDIS_URL).
	QueuesRedisURL string
	// LogLevel is debug, info, warn or error (LOG_LEVEL).
	LogLevel string
	// Services maps a service name to its base URL (IDENTITY_URL, ...).
	Services map[string]string
	// JWKSURL is IDENTITY_URL + /auth/jwks; tests may point it elsewhere.
	JWKSURL string
	// InternalSecret authenticates the gateway to identity's
	// /internal/api-keys/verify (CRM_INTERNAL_SECRET, required).
	InternalSecret string
	// UpstreamTimeout bounds the wait for a service's response headers
	// (CRM_UPSTREAM_TIMEOUT, default 35s: longer than render's 30 s wait).
	UpstreamTimeout time.Duration
	// UserPerMinute and IPPerMinute are the rate limits; 0 turns one off.
	UserPerMinute int
	IPPerMinute   int
	// RateLimitPrefix namespaces the Redis keys (tests use a random one).
	RateLimitPrefix string
	// CORSOrigins may call /api/public/* from a browser; "*" is any origin
	// (CRM_CORS_ORIGINS, comma separated, default "*": the API key, not a
	// cookie, is the credential there, and intake checks per-key origins).
	CORSOrigins []string
	// TrustedProxies may set X-Forwarded-For (CRM_TRUSTED_PROXIES, comma
	// separated IPs or CIDRs, default loopback).
	TrustedProxies []netip.Prefix
	// HSTSMaxAge adds Strict-Transport-Security when > 0
	// (CRM_HSTS_MAX_AGE, seconds, default 0: TLS usually ends in front).
	HSTSMaxAge int
	// APIKeyCacheTTL bounds how long an API key or integration token
	// verdict is reused (≤ 5 s, so a revoked key or token is refused
	// everywhere within 5 s).
	APIKeyCacheTTL time.Duration
	// ShutdownDelay is how long the gateway keeps serving, /readyz at 503,
	// once told to stop (CRM_SHUTDOWN_DELAY, default 5s; 0 off).
	ShutdownDelay time.Duration
	// DrainTimeout bounds the wait for requests in flight after that
	// (CRM_DRAIN_TIMEOUT, default 40s: above CRM_UPSTREAM_TIMEOUT).
	DrainTimeout time.Duration
}

// serviceEnv lists the service URL variables and their defaults.
var serviceEnv = []struct{ name, env, def string }{
	{SvcIdentity, "IDENTITY_URL", "http://localhost:8081"},
	{SvcContacts, "CONTACTS_URL", "http://localhost:8082"},
	{SvcLeads, "LEADS_URL", "http://localhost:8083"},
	{SvcDeals, "DEALS_URL", "http://localhost:8084"},
	{SvcContracts, "CONTRACTS_URL", "http://localhost:8085"},
	{SvcIntake, "INTAKE_URL", "http://localhost:8086"},
	{SvcMail, "MAIL_URL", "http://localhost:8087"},
	{SvcWebhooks, "WEBHOOKS_URL", "http://localhost:8089"},
}

// LoadConfig reads and validates the configuration; every problem is
// reported at once.
func LoadConfig(l *config.Loader) (Config, error) {
	c := Config{
		Addr:            l.String("ADDR", ":8080"),
		OpsAddr:         l.String("OPS_ADDR", ":9080"),
		Tracing:         tracing.Load(l),
		RedisURL:        l.URL("REDIS_URL", "redis://localhost:6379/0"),
		LogLevel:        l.String("LOG_LEVEL", "info"),
		Services:        map[string]string{},
		InternalSecret:  l.Required("CRM_INTERNAL_SECRET"),
		UpstreamTimeout: l.Duration("CRM_UPSTREAM_TIMEOUT", 35*time.Second),
		UserPerMinute:   l.Int("CRM_RATE_LIMIT_USER_PER_MINUTE", 1200, 0, 1_000_000),
		IPPerMinute:     l.Int("CRM_RATE_LIMIT_IP_PER_MINUTE", 6000, 0, 1_000_000),
		RateLimitPrefix: "crm:gateway:rl:",
		HSTSMaxAge:      l.Int("CRM_HSTS_MAX_AGE", 0, 0, 1<<30),
		APIKeyCacheTTL:  5 * time.Second,
	}
	c.QueuesRedisURL = l.URL("CRM_QUEUES_REDIS_URL", c.RedisURL)
	for _, s := range serviceEnv {
		c.Services[s.name] = strings.TrimRight(l.URL(s.env, s.def), "/")
	}
	c.JWKSURL = c.Services[SvcIdentity] + "/auth/jwks"
	sd := httpx.LoadShutdown(l)
	c.ShutdownDelay, c.DrainTimeout = sd.Delay, sd.Drain
	switch c.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		l.Check(false, "LOG_LEVEL", fmt.Sprintf("must be debug, info, warn or error, got %q", c.LogLevel))
	}
	if c.InternalSecret != "" {
		if err := auth.CheckInternalSecret(c.InternalSecret); err != nil {
			l.Check(false, "CRM_INTERNAL_SECRET", err.Error())
		}
	}
	l.Check(c.UpstreamTimeout > 0, "CRM_UPSTREAM_TIMEOUT", "must be greater than zero")
	// A drain shorter than the upstream wait would cut off requests still
	// waiting for a slow service (a contract PDF) at every rollout.
	l.Check(c.DrainTimeout >= c.UpstreamTimeout, "CRM_DRAIN_TIMEOUT", "must be at least CRM_UPSTREAM_TIMEOUT")
	c.CORSOrigins = splitList(l.String("CRM_CORS_ORIGINS", "*"))
	proxies, err := parsePrefixes(l.String("CRM_TRUSTED_PROXIES", "127.0.0.0/8,::1/128"))
	l.Check(err == nil, "CRM_TRUSTED_PROXIES", fmt.Sprint(err))
	c.TrustedProxies = proxies
	return c, l.Err()
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// parsePrefixes accepts IPs and CIDRs; a bare IP is a single-address prefix.
func parsePrefixes(s string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, p := range splitList(s) {
		if strings.Contains(p, "/") {
			pf, err := netip.ParsePrefix(p)
			if err != nil {
				return nil, fmt.Errorf("%q is not an IP or CIDR", p)
			}
			out = append(out, pf.Masked())
			continue
		}
		a, err := netip.ParseAddr(p)
		if err != nil {
			return nil, fmt.Errorf("%q is not an IP or CIDR", p)
		}
		out = append(out, netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()))
	}
	return out, nil
}
