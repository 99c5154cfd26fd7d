package platform_test

import (
	"strings"
	"testing"

	"github.com/opencrm/crm/pkg/config"
	"github.com/opencrm/crm/pkg/platform"
)

func TestLoad(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		env     map[string]string
		wantErr string
	}{
		{"secret missing", map[string]string{}, "CRM_INTERNAL_SECRET: is required"},
		{"secret short", map[string]string{"CRM_INTERNAL_SECRET": "short"}, "CRM_INTERNAL_SECRET: must be at least 16 characters"},
		{"bad identity url", map[string]string{"CRM_INTERNAL_SECRET": "0123456789abcdef", "IDENTITY_URL": "identity"}, "IDENTITY_URL"},
		{"ok", map[string]string{"CRM_INTERNAL_SECRET": "0123456789abcdef", "IDENTITY_URL": "http://id:8081/"}, ""},
	}
	for _, tt := range tests {
		l := config.FromMap(tt.env)
		s := platform.Load(l, ":9000")
		err := l.Err()
		if tt.wantErr == "" {
			if err != nil {
				t.Errorf("%s: %v", tt.name, err)
			}
			if s.Addr != ":9000" || s.IdentityURL != "http://id:8081" {
				t.Errorf("%s: settings %+v", tt.name, s)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
			t.Errorf("%s: error %v, want %q", tt.name, err, tt.wantErr)
		}
	}
}
