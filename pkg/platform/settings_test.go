package platform_test

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/opencrm/crm/pkg/config"
	"github.com/opencrm/crm/pkg/httpx"
	"github.com/opencrm/crm/pkg/platform"
	"github.com/opencrm/crm/pkg/tracing"
)

// service is how a service's main declares its configuration.
type service struct {
	platform.Settings
	ContactsURL string `env:"CONTACTS_URL" envDefault:"http://localhost:8082"`
}

func TestSettingsDefaults(t *testing.T) {
	t.Parallel()
	got := service{Settings: platform.Defaults(":8083")}
	if err := config.ParseMap(&got, map[string]string{"CRM_INTERNAL_SECRET": "0123456789abcdef", "IDENTITY_URL": "http://identity:8081/"}); err != nil {
		t.Fatal(err)
	}
	want := service{
		Settings: platform.Settings{
			Common: config.Common{Addr: ":8083", DatabaseURL: "postgres://postgres@localhost:5432/crm?sslmode=disable",
				RedisURL: "redis://localhost:6379/0", LogLevel: "info"},
			IdentityURL: "http://identity:8081", InternalSecret: "0123456789abcdef",
			Shutdown: httpx.Shutdown{Delay: 5 * time.Second, Drain: 40 * time.Second},
			Tracing: tracing.Config{Exporter: "otlp", Sampler: "parentbased_always_on", SamplerArg: "1", Ratio: 1,
				Batching: tracing.Batching{Delay: 5 * time.Second, DelayMS: 5000, Timeout: 30 * time.Second, TimeoutMS: 30000, MaxQueue: 2048, MaxBatch: 512}},
		},
		ContactsURL: "http://localhost:8082",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got)\n%s", diff)
	}
	if want.Tracing.Batching.Delay != tracing.DefaultBatching.Delay || want.Tracing.Batching.MaxBatch != tracing.DefaultBatching.MaxBatch {
		t.Error("the tagged defaults must be the specification's (DefaultBatching)")
	}
}

// TestSettingsReportsEveryProblem: each bad variable is named once, in one
// error, and a password in a bad URL stays out of it.
func TestSettingsReportsEveryProblem(t *testing.T) {
	t.Parallel()
	got := service{Settings: platform.Defaults(":8083")}
	err := config.ParseMap(&got, map[string]string{
		"CRM_INTERNAL_SECRET": "short", "DATABASE_URL": "postgres://u:S3cr#t/x@db/crm", "LOG_LEVEL": "loud",
		"DB_MAX_CONNS": "5000", "CRM_DRAIN_TIMEOUT": "0s", "CRM_SHUTDOWN_DELAY": "soon",
		"OTEL_TRACES_SAMPLER": "parentbased_traceidratio", "OTEL_TRACES_SAMPLER_ARG": "2",
		"OTEL_BSP_MAX_QUEUE_SIZE": "10", "OTEL_BSP_MAX_EXPORT_BATCH_SIZE": "20",
	})
	if err == nil {
		t.Fatal("want an error")
	}
	for _, name := range []string{"CRM_INTERNAL_SECRET", "DATABASE_URL", "LOG_LEVEL", "DB_MAX_CONNS", "CRM_DRAIN_TIMEOUT",
		"CRM_SHUTDOWN_DELAY", "OTEL_TRACES_SAMPLER_ARG", "OTEL_BSP_MAX_EXPORT_BATCH_SIZE"} {
		if n := strings.Count(err.Error(), name+":"); n != 1 {
			t.Errorf("%s named %d times in %v", name, n, err)
		}
	}
	if strings.Contains(err.Error(), "S3cr") {
		t.Errorf("password leaked: %v", err)
	}
}
