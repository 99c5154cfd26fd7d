package main

import (
	"fmt"
	"os"
	"time"

	"github.com/opencrm/crm/pkg/config"
	"github.com/opencrm/crm/pkg/httpx"
	"github.com/opencrm/crm/pkg/renderq"
	"github.com/opencrm/crm/pkg/tracing"
)

// settings is the worker's configuration, read once from the environment.
// The worker has no database and verifies no token, so it reads none of
// the platform's other settings.
type settings struct {
	Addr     string `env:"ADDR"`
	LogLevel string `env:"LOG_LEVEL" envDefault:"info"`
	// Queue is the render queue the services submit to (REDIS_URL,
	// RENDER_QUEUE_PREFIX, RENDER_RESULT_TTL...).
	Queue      renderq.Config
	ChromePath string `env:"CHROME_PATH" envDefault:"chromium"`
	// NoSandbox turns Chromium's sandbox off. The sandbox refuses to run
	// as root; the image runs as an unprivileged user, so by default only
	// a root run (dev machine, CI) turns it off.
	NoSandbox    bool `env:"CHROME_NO_SANDBOX"`
	Tabs         int  `env:"RENDER_TABS" envDefault:"4" min:"1" max:"64"`
	RestartAfter int  `env:"RENDER_BROWSER_RESTART_AFTER" envDefault:"500" min:"1" max:"1000000"`
	// JobTimeout is below the client's 30 s wait, so a document too heavy
	// to lay out is refused while its user still waits, instead of holding
	// a tab after the user got a 503 (docs/decisions.md).
	JobTimeout time.Duration `env:"RENDER_JOB_TIMEOUT" envDefault:"20s" min:"0s"`
	MaxPages   int           `env:"RENDER_MAX_PAGES" envDefault:"300" min:"1" max:"100000"`
	// Concurrency is how many jobs run at once; unset, two more than Tabs:
	// DOCX jobs need no tab, so a couple of extra slots keep them flowing
	// while every tab prints. Validate fills it in.
	Concurrency *int `env:"RENDER_CONCURRENCY"`
	Shutdown    httpx.Shutdown
	Tracing     tracing.Config
}

// maxConcurrency bounds RENDER_CONCURRENCY.
const maxConcurrency = 256

// Validate fills in the default concurrency and bounds a given one.
func (s *settings) Validate() error {
	if s.Concurrency == nil {
		n := s.Tabs + 2
		s.Concurrency = &n
		return nil
	}
	if n := *s.Concurrency; n < 1 || n > maxConcurrency {
		return fmt.Errorf("RENDER_CONCURRENCY: must be between 1 and %d, got %d", maxConcurrency, n)
	}
	return nil
}

// defaults are the settings before the environment is read: the worker
// serves its operations endpoints on :8088.
func defaults() settings { return settings{Addr: ":8088", NoSandbox: os.Geteuid() == 0} }

// load reads the settings from the environment.
func load() (settings, error) {
	s := defaults()
	return s, config.Parse(&s)
}
