package main

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/opencrm/crm/pkg/config"
	"github.com/opencrm/crm/pkg/platform"
	"github.com/opencrm/crm/services/mail/internal/imapsync"
	"github.com/opencrm/crm/services/mail/internal/jobs"
)

// parse reads env as main reads the environment.
func parse(env map[string]string) (settings, error) {
	s := defaults()
	err := config.ParseMap(&s, env)
	return s, err
}

// TestLoadBlocksPrivateHostsByDefault: a user-chosen IMAP host may reach
// private and loopback addresses only when the operator says so.
func TestLoadBlocksPrivateHostsByDefault(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		env  map[string]string
		want bool
	}{
		{"default", map[string]string{}, true},
		{"allowed by the operator", map[string]string{"MAIL_IMAP_BLOCK_PRIVATE": "false"}, false},
		{"explicitly on", map[string]string{"MAIL_IMAP_BLOCK_PRIVATE": "true"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			env := map[string]string{"CRM_INTERNAL_SECRET": "0123456789abcdef"}
			for k, v := range tt.env {
				env[k] = v
			}
			s, err := parse(env)
			if err != nil {
				t.Fatal(err)
			}
			if s.Sync.BlockPrivate != tt.want {
				t.Errorf("BlockPrivate = %v, want %v", s.Sync.BlockPrivate, tt.want)
			}
		})
	}
}

// TestLoadGreetingTimeout: MAIL_IMAP_GREETING_TIMEOUT bounds the wait for
// an IMAP greeting, 8 s unless set; it must leave a sync time to run.
func TestLoadGreetingTimeout(t *testing.T) {
	t.Parallel()
	tests := []struct {
		value   string // "" leaves it unset
		want    time.Duration
		wantErr string
	}{
		{value: "", want: 8 * time.Second},
		{value: "3s", want: 3 * time.Second},
		{value: "500ms", wantErr: "MAIL_IMAP_GREETING_TIMEOUT: must be at least 1s and less than MAIL_SYNC_TIMEOUT"},
		{value: "10m", wantErr: "MAIL_IMAP_GREETING_TIMEOUT: must be at least 1s and less than MAIL_SYNC_TIMEOUT"},
		{value: "soon", wantErr: `MAIL_IMAP_GREETING_TIMEOUT: must be a positive duration such as 30s, got "soon"`},
	}
	for _, tt := range tests {
		t.Run(tt.value, func(t *testing.T) {
			t.Parallel()
			env := map[string]string{"CRM_INTERNAL_SECRET": "0123456789abcdef"}
			if tt.value != "" {
				env["MAIL_IMAP_GREETING_TIMEOUT"] = tt.value
			}
			s, err := parse(env)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want one with %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if s.Sync.GreetingTimeout != tt.want {
				t.Errorf("GreetingTimeout = %s, want %s", s.Sync.GreetingTimeout, tt.want)
			}
		})
	}
}

// TestDefaults: unset, every variable keeps the default the settings had
// when they were read one call at a time, and a sync task lives as long
// as its lease.
func TestDefaults(t *testing.T) {
	t.Parallel()
	got, err := parse(map[string]string{"CRM_INTERNAL_SECRET": "0123456789abcdef", "CONTACTS_URL": "http://contacts:8082/"})
	if err != nil {
		t.Fatal(err)
	}
	want := settings{
		Settings:    platform.Defaults(":8087"),
		ContactsURL: "http://contacts:8082", LeadsURL: "http://localhost:8083", SyncWorker: true,
		Jobs: jobs.Config{Queue: "mail", Interval: 5 * time.Minute, Concurrency: 4, TaskTimeout: 10 * time.Minute},
		Sync: imapsync.Options{Lease: 10 * time.Minute, GreetingTimeout: 8 * time.Second, BlockPrivate: true},
	}
	if diff := cmp.Diff(want, got, cmpopts.IgnoreFields(settings{}, "Settings")); diff != "" {
		t.Errorf("settings (-want +got):\n%s", diff)
	}
	if got.Addr != ":8087" {
		t.Errorf("ADDR = %q, want :8087", got.Addr)
	}
}

// TestBadValues: each bad value fails start-up with an error naming its
// variable.
func TestBadValues(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, variable, value, want string
	}{
		{"contacts URL not absolute", "CONTACTS_URL", "contacts:8082", "CONTACTS_URL: must be an absolute URL"},
		{"leads URL not absolute", "LEADS_URL", "/leads", "LEADS_URL: must be an absolute URL"},
		{"short secret key", "CRM_SECRET_KEY", "short", "CRM_SECRET_KEY: must be at least 16 characters"},
		{"not a bool", "MAIL_SYNC_WORKER", "maybe", "MAIL_SYNC_WORKER"},
		{"interval under 1s", "MAIL_SYNC_INTERVAL", "500ms", "MAIL_SYNC_INTERVAL: must be at least 1s"},
		{"negative interval", "MAIL_SYNC_INTERVAL", "-1m", `MAIL_SYNC_INTERVAL: must be a positive duration such as 30s, got "-1m"`},
		{"concurrency over 64", "MAIL_SYNC_CONCURRENCY", "65", "MAIL_SYNC_CONCURRENCY: must be between 1 and 64, got 65"},
		{"concurrency 0", "MAIL_SYNC_CONCURRENCY", "0", "MAIL_SYNC_CONCURRENCY: must be between 1 and 64, got 0"},
		{"lease under 5s", "MAIL_SYNC_TIMEOUT", "4s", "MAIL_SYNC_TIMEOUT: must be at least 5s"},
		{"not a duration", "MAIL_SYNC_TIMEOUT", "long", "MAIL_SYNC_TIMEOUT"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := parse(map[string]string{"CRM_INTERNAL_SECRET": "0123456789abcdef", tt.variable: tt.value})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error = %v, want one with %q", err, tt.want)
			}
		})
	}
}
