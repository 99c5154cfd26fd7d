package problem_test

import (
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"testing"

	"github.com/opencrm/crm/pkg/problem"
)

type sqlState string

// connClosed is how the driver reports a connection it already closed.
type connClosed struct{}

func (connClosed) Error() string     { return "conn closed" }
func (connClosed) SafeToRetry() bool { return true }

func (s sqlState) Error() string    { return "pg error " + string(s) }
func (s sqlState) SQLState() string { return string(s) }

// TestUnreachableDependencyIs503: a database that cannot be reached or
// drops the connection is a 503 with Retry-After, not a 500 (found by
// deploy/e2e's TestFaultPostgresCut).
func TestUnreachableDependencyIs503(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		err  error
		want int
	}{
		{"refused", fmt.Errorf("db: %w", &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}), 503},
		{"reset", fmt.Errorf("query: %w", syscall.ECONNRESET), 503},
		{"cut short", fmt.Errorf("receive message: %w", io.ErrUnexpectedEOF), 503},
		{"connection failure", sqlState("08006"), 503},
		{"conn closed", fmt.Errorf("begin: %w", connClosed{}), 503},
		{"admin shutdown", sqlState("57P01"), 503},
		{"cannot connect now", sqlState("57P03"), 503},
		{"unique violation", sqlState("23505"), 500},
		{"bug", errors.New("nil map"), 500},
	}
	for _, tt := range tests {
		p := problem.From(tt.err)
		if p.Status != tt.want {
			t.Errorf("%s: status %d, want %d", tt.name, p.Status, tt.want)
		}
		if tt.want == 503 && (p.Code != "upstream_unavailable" || p.RetryAfter != 1) {
			t.Errorf("%s: %s retry after %d", tt.name, p.Code, p.RetryAfter)
		}
	}
}
