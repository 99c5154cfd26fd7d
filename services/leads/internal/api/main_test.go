package api_test

import (
	"io"
	"log/slog"
	"os"
	"testing"
)

// TestMain keeps request logs out of test and benchmark output; errors
// (5xx causes) still print.
func TestMain(m *testing.M) {
	slog.SetDefault(slog.New(slog.NewTextHandler(io.MultiWriter(os.Stderr), &slog.HandlerOptions{Level: slog.LevelError})))
	os.Exit(m.Run())
}
