package platform_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/opencrm/crm/pkg/config"
	"github.com/opencrm/crm/pkg/db"
	"github.com/opencrm/crm/pkg/platform"
	"github.com/opencrm/crm/pkg/testdb"
)

// TestSettingsChecks: the internal secret is required and long enough,
// the identity URL absolute (its trailing slash trimmed), the drain timeout
// above zero.
func TestSettingsChecks(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		env     map[string]string
		wantErr string
	}{
		{"secret missing", map[string]string{}, "CRM_INTERNAL_SECRET: is required"},
		{"secret short", map[string]string{"CRM_INTERNAL_SECRET": "short"}, "CRM_INTERNAL_SECRET: must be at least 16 characters"},
		{"bad identity url", map[string]string{"CRM_INTERNAL_SECRET": "0123456789abcdef", "IDENTITY_URL": "identity"}, "IDENTITY_URL"},
		{"bad drain timeout", map[string]string{"CRM_INTERNAL_SECRET": "0123456789abcdef", "CRM_DRAIN_TIMEOUT": "0s"}, "CRM_DRAIN_TIMEOUT: must be greater than zero"},
		{"ok", map[string]string{"CRM_INTERNAL_SECRET": "0123456789abcdef", "IDENTITY_URL": "http://id:8081/"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := platform.Defaults(":9000")
			err := config.ParseMap(&s, tt.env)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				if s.Addr != ":9000" || s.IdentityURL != "http://id:8081" {
					t.Errorf("settings %+v", s)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("error %v, want %q", err, tt.wantErr)
			}
		})
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

// TestReadinessNeedsPostgresOnly: a service opened by platform is ready
// while Redis is down (its requests do not need Redis, and every replica
// shares it), reports Redis in the body, and is unready without PostgreSQL.
func TestReadinessNeedsPostgresOnly(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, dbURL, drop, err := testdb.Create(ctx, "platformtest", func(context.Context, *db.DB) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(drop)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	redisDown := "redis://" + ln.Addr().String() + "/0"
	_ = ln.Close()

	tests := []struct {
		name       string
		redisURL   string
		closeDB    bool
		wantStatus int
		wantBody   map[string]any
	}{
		{"all up", "redis://127.0.0.1:6379/0", false, 200,
			map[string]any{"status": "ok", "checks": map[string]any{"postgres": "ok", "redis": "ok"}}},
		{"redis down", redisDown, false, 200,
			map[string]any{"status": "ok", "checks": map[string]any{"postgres": "ok", "redis": "unavailable"}}},
		{"postgres gone", "redis://127.0.0.1:6379/0", true, 503,
			map[string]any{"status": "unavailable", "checks": map[string]any{"postgres": "unavailable", "redis": "ok"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := platform.Settings{
				Common:      config.Common{DatabaseURL: dbURL, RedisURL: tc.redisURL, LogLevel: "error"},
				IdentityURL: "http://127.0.0.1:1",
			}
			rt, err := platform.Open(ctx, "platformtest", "platformtest", s, func(context.Context, *db.DB) error { return nil })
			if err != nil {
				t.Fatal(err)
			}
			defer rt.Close()
			if tc.closeDB {
				rt.DB.Close()
			}
			srv := httptest.NewServer(rt.Ops.Handler(http.NotFoundHandler()))
			defer srv.Close()
			resp, err := http.Get(srv.URL + "/readyz")
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var body map[string]any
			if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != tc.wantStatus {
				t.Errorf("status = %d, want %d", resp.StatusCode, tc.wantStatus)
			}
			if d := cmp.Diff(tc.wantBody, body); d != "" {
				t.Errorf("body (-want +got):\n%s", d)
			}
		})
	}
}
