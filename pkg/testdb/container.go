//go:build testcontainers

package testdb

import (
	"context"
	"fmt"
	"os/exec"

	"github.com/testcontainers/testcontainers-go"
	"github.com/testcontainers/testcontainers-go/modules/postgres"
	"github.com/testcontainers/testcontainers-go/wait"
)

// With the testcontainers tag (make test adds it by itself when no local
// PostgreSQL answers and Docker does), a machine without a server gets one
// PostgreSQL container per test process.
func init() {
	startServer = func(ctx context.Context) (string, func(), error) {
		if err := exec.CommandContext(ctx, "docker", "info").Run(); err != nil {
			return "", nil, fmt.Errorf("no PostgreSQL server and no Docker engine: %w", err)
		}
		c, err := postgres.Run(ctx, "postgres:15",
			postgres.WithDatabase("postgres"), postgres.WithUsername("postgres"), postgres.WithPassword("postgres"),
			testcontainers.WithWaitStrategy(wait.ForListeningPort("5432/tcp")))
		if err != nil {
			return "", nil, err
		}
		url, err := c.ConnectionString(ctx, "sslmode=disable")
		if err != nil {
			_ = c.Terminate(context.Background())
			return "", nil, err
		}
		return url, func() { _ = c.Terminate(context.Background()) }, nil
	}
}
