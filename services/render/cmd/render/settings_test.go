package main

import (
	"maps"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/opencrm/crm/pkg/config"
	"github.com/opencrm/crm/pkg/renderq"
)

// parse reads m as the environment, as load reads the process's.
func parse(m map[string]string) (settings, error) {
	s := defaults()
	return s, config.ParseMap(&s, m)
}

func TestSettings(t *testing.T) {
	t.Parallel()
	t.Run("defaults", func(t *testing.T) {
		t.Parallel()
		s, err := parse(nil)
		if err != nil {
			t.Fatal(err)
		}
		type shown struct {
			Addr, LogLevel, ChromePath                string
			NoSandbox                                 bool
			Tabs, RestartAfter, MaxPages, Concurrency int
			JobTimeout                                time.Duration
			Queue                                     renderq.Config
		}
		want := shown{":8088", "info", "chromium", os.Geteuid() == 0, 4, 500, 300, 6, 20 * time.Second,
			renderq.Config{RedisURL: "redis://localhost:6379/0", Queues: renderq.Queues{Prefix: "render"},
				Wait: 30 * time.Second, ResultTTL: 24 * time.Hour, MaxRetry: 3, PerUser: 2,
				Cooldown: 10 * time.Second, Lang: "en"}}
		got := shown{s.Addr, s.LogLevel, s.ChromePath, s.NoSandbox, s.Tabs, s.RestartAfter, s.MaxPages,
			*s.Concurrency, s.JobTimeout, s.Queue}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("defaults (-want +got):\n%s", diff)
		}
	})
	tests := []struct {
		name            string
		env             map[string]string
		wantConcurrency int
		wantErr         string
	}{
		{"concurrency follows tabs", map[string]string{"RENDER_TABS": "8"}, 10, ""},
		{"concurrency given", map[string]string{"RENDER_TABS": "8", "RENDER_CONCURRENCY": "3"}, 3, ""},
		{"concurrency zero", map[string]string{"RENDER_CONCURRENCY": "0"}, 0, "RENDER_CONCURRENCY: must be between 1 and 256"},
		{"concurrency not a number", map[string]string{"RENDER_CONCURRENCY": "many"}, 0, "RENDER_CONCURRENCY"},
		{"tabs out of range", map[string]string{"RENDER_TABS": "65"}, 0, "RENDER_TABS: must be between 1 and 64"},
		{"timeout negative", map[string]string{"RENDER_JOB_TIMEOUT": "-1s"}, 0, "RENDER_JOB_TIMEOUT"},
		{"sandbox not a bool", map[string]string{"CHROME_NO_SANDBOX": "perhaps"}, 0, "CHROME_NO_SANDBOX"},
		{"redis not a URL", map[string]string{"REDIS_URL": "localhost:6379"}, 0, "REDIS_URL"},
		{"drain zero", map[string]string{"CRM_DRAIN_TIMEOUT": "0s"}, 0, "CRM_DRAIN_TIMEOUT"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s, err := parse(maps.Clone(tc.env))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Errorf("error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if *s.Concurrency != tc.wantConcurrency {
				t.Errorf("concurrency = %d, want %d", *s.Concurrency, tc.wantConcurrency)
			}
		})
	}
}
