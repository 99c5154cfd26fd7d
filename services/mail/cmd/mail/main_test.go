package main

import (
	"strings"
	"testing"
	"time"

	"github.com/opencrm/crm/pkg/config"
)

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
			s, err := load(config.FromMap(env))
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
			s, err := load(config.FromMap(env))
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
