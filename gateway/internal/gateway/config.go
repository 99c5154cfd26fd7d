package gateway

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"time"

	"github.com/opencrm/crm/pkg/auth"
	"github.com/opencrm/crm/pkg/config"
	"github.com/opencrm/crm/pkg/contract/identityapi"
	"github.com/opencrm/crm/pkg/httpx"
	"github.com/opencrm/crm/pkg/tracing"
)

// Config is everything the gateway reads from the environment, filled and
// validated once at start-up by config.Parse.
type Config struct {
	// Addr is the listen address.
	Addr string `env:"ADDR" envDefault:":8080"`
	// OpsAddr is the ops listener, /metrics, /healthz and /readyz;
	// /metrics is not on Addr.
	OpsAddr string `env:"OPS_ADDR" envDefault:":9080"`
	// Tracing is the OpenTelemetry exporter setting (off when unset).
	Tracing tracing.Config
	// RedisURL is where rate-limit counters live.
	RedisURL config.URL `env:"REDIS_URL" envDefault:"redis://localhost:6379/0"`
	// QueuesRedisURL is the Redis of the asynq queues the queues UI shows
	// (default REDIS_URL).
	QueuesRedisURL config.URL `env:"CRM_QUEUES_REDIS_URL"`
	// LogLevel is debug, info, warn or error.
	LogLevel string `env:"LOG_LEVEL" envDefault:"info"`
	// Upstreams are the services' base URLs.
	Upstreams Upstreams
	// Services maps a service name to its base URL, from Upstreams.
	Services map[string]string
	// JWKSURL is identity's JWKS route; tests may point it elsewhere.
	JWKSURL string
	// InternalSecret authenticates the gateway to identity's
	// /internal/api-keys/verify (required).
	InternalSecret string `env:"CRM_INTERNAL_SECRET"`
	// UpstreamTimeout bounds the wait for a service's response headers
	// (default 35s: longer than render's 30 s wait).
	UpstreamTimeout time.Duration `env:"CRM_UPSTREAM_TIMEOUT" envDefault:"35s" min:"1ns"`
	// UserPerMinute and IPPerMinute are the rate limits; 0 turns one off.
	UserPerMinute int `env:"CRM_RATE_LIMIT_USER_PER_MINUTE" envDefault:"1200" min:"0" max:"1000000"`
	IPPerMinute   int `env:"CRM_RATE_LIMIT_IP_PER_MINUTE" envDefault:"6000" min:"0" max:"1000000"`
	// RateLimitPrefix namespaces the Redis keys (tests use a random one).
	RateLimitPrefix string
	// CORSOrigins may call /api/public/* from a browser; "*" is any origin
	// (comma separated; "*" by default: the API key, not a cookie, is the
	// credential there, and intake checks per-key origins).
	CORSOrigins List `env:"CRM_CORS_ORIGINS" envDefault:"*"`
	// TrustedProxies may set X-Forwarded-For (comma separated IPs or
	// CIDRs, loopback by default).
	TrustedProxies Prefixes `env:"CRM_TRUSTED_PROXIES" envDefault:"127.0.0.0/8,::1/128"`
	// HSTSMaxAge adds Strict-Transport-Security when > 0 (seconds; 0 by
	// default: TLS usually ends in front).
	HSTSMaxAge int `env:"CRM_HSTS_MAX_AGE" envDefault:"0" min:"0" max:"1073741824"`
	// APIKeyCacheTTL bounds how long an API key or integration token
	// verdict is reused (≤ 5 s, so a revoked key or token is refused
	// everywhere within 5 s).
	APIKeyCacheTTL time.Duration
	// Shutdown is how long the gateway keeps serving, /readyz at 503, once
	// told to stop (CRM_SHUTDOWN_DELAY, default 5s; 0 off), and how long
	// it then waits for requests in flight (CRM_DRAIN_TIMEOUT, default 40s:
	// above CRM_UPSTREAM_TIMEOUT).
	Shutdown httpx.Shutdown
}

// Upstreams are the base URLs of the services the gateway proxies to.
type Upstreams struct {
	Identity  config.URL `env:"IDENTITY_URL" envDefault:"http://localhost:8081"`
	Contacts  config.URL `env:"CONTACTS_URL" envDefault:"http://localhost:8082"`
	Leads     config.URL `env:"LEADS_URL" envDefault:"http://localhost:8083"`
	Deals     config.URL `env:"DEALS_URL" envDefault:"http://localhost:8084"`
	Contracts config.URL `env:"CONTRACTS_URL" envDefault:"http://localhost:8085"`
	Intake    config.URL `env:"INTAKE_URL" envDefault:"http://localhost:8086"`
	Mail      config.URL `env:"MAIL_URL" envDefault:"http://localhost:8087"`
	Webhooks  config.URL `env:"WEBHOOKS_URL" envDefault:"http://localhost:8089"`
}

// byService keys the URLs by the service names the declarations use.
func (u Upstreams) byService() map[string]string {
	return map[string]string{
		SvcIdentity: u.Identity.String(), SvcContacts: u.Contacts.String(), SvcLeads: u.Leads.String(),
		SvcDeals: u.Deals.String(), SvcContracts: u.Contracts.String(), SvcIntake: u.Intake.String(),
		SvcMail: u.Mail.String(), SvcWebhooks: u.Webhooks.String(),
	}
}

// Validate holds the rules across fields and settles the derived ones
// (Services, JWKSURL, the queues' Redis, the fixed defaults).
func (c *Config) Validate() error {
	errs := []error{config.CheckLogLevel(c.LogLevel)}
	if c.InternalSecret == "" {
		errs = append(errs, errors.New("CRM_INTERNAL_SECRET: is required"))
	} else if err := auth.CheckInternalSecret(c.InternalSecret); err != nil {
		errs = append(errs, fmt.Errorf("CRM_INTERNAL_SECRET: %w", err))
	}
	// A drain shorter than the upstream wait would cut off requests still
	// waiting for a slow service (a contract PDF) at every rollout.
	if c.Shutdown.Drain < c.UpstreamTimeout {
		errs = append(errs, errors.New("CRM_DRAIN_TIMEOUT: must be at least CRM_UPSTREAM_TIMEOUT"))
	}
	if c.QueuesRedisURL == "" {
		c.QueuesRedisURL = c.RedisURL
	}
	c.Services = c.Upstreams.byService()
	c.JWKSURL = c.Services[SvcIdentity] + identityapi.GetJWKS.Path
	if c.RateLimitPrefix == "" {
		c.RateLimitPrefix = "crm:gateway:rl:"
	}
	if c.APIKeyCacheTTL == 0 {
		c.APIKeyCacheTTL = 5 * time.Second
	}
	return errors.Join(errs...)
}

// List is a comma-separated setting; blank items are dropped.
type List []string

// UnmarshalText splits the value at commas.
func (l *List) UnmarshalText(b []byte) error {
	*l = splitList(string(b))
	return nil
}

// Prefixes is a comma-separated list of IPs and CIDRs; a bare IP is a
// single-address prefix.
type Prefixes []netip.Prefix

// UnmarshalText parses the list.
func (p *Prefixes) UnmarshalText(b []byte) error {
	out, err := parsePrefixes(string(b))
	*p = out
	return err
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
