package main

import (
	"testing"

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
