package platform_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

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

func TestEveryKeepsGoingAfterAFailure(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	calls := make(chan int, 10)
	n := 0
	done := make(chan struct{})
	go func() {
		platform.Every(ctx, time.Millisecond, slog.New(slog.NewTextHandler(io.Discard, nil)), "test", func(context.Context) error {
			n++
			calls <- n
			if n == 1 {
				return errors.New("first run fails")
			}
			return nil
		})
		close(done)
	}()
	for got := range calls {
		if got == 3 {
			break
		}
	}
	cancel()
	<-done
}

func TestBackgroundStopCancelsAndWaits(t *testing.T) {
	t.Parallel()
	started := make(chan struct{}, 2)
	var ended [2]bool
	stop := platform.Background(context.Background(),
		func(ctx context.Context) { started <- struct{}{}; <-ctx.Done(); ended[0] = true },
		func(ctx context.Context) { started <- struct{}{}; <-ctx.Done(); ended[1] = true },
	)
	<-started
	<-started
	stop()
	if !ended[0] || !ended[1] {
		t.Fatalf("stop returned before every loop ended: %v", ended)
	}
}
