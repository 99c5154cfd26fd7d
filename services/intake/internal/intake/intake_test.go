package intake

import (
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/opencrm/crm/pkg/problem"
)

func TestInputValidate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		in     Input
		fields []string
	}{
		{"valid", Input{FirstName: "A", LastName: "B", Email: "a@b.example"}, nil},
		{"all missing", Input{}, []string{"first_name", "last_name", "email"}},
		{"bad email", Input{FirstName: "A", LastName: "B", Email: "a@b"}, []string{"email"}},
		{"names at limit", Input{FirstName: strings.Repeat("é", 100), LastName: "B", Email: "a@b.example"}, nil},
		{"name over limit", Input{FirstName: strings.Repeat("é", 101), LastName: "B", Email: "a@b.example"}, []string{"first_name"}},
		{"notes over 100k", Input{FirstName: "A", LastName: "B", Email: "a@b.example", Notes: strings.Repeat("x", 100_001)}, []string{"notes"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			in := tc.in
			Normalize(&in)
			var got []string
			if err := Validate(in); err != nil {
				for _, fe := range problem.From(err).Errors {
					got = append(got, fe.Field)
				}
			}
			if diff := cmp.Diff(tc.fields, got); diff != "" {
				t.Errorf("fields (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNormalizeDefaultsSource(t *testing.T) {
	t.Parallel()
	in := Input{FirstName: " A ", Source: "  "}
	Normalize(&in)
	if in.FirstName != "A" || in.Source != DefaultSource {
		t.Errorf("normalized = %+v", in)
	}
}

func TestBackoff(t *testing.T) {
	t.Parallel()
	cfg := DefaultConfig()
	m, err := NewMetrics(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewService(nopStore{}, nopLeads{}, cfg, m, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		n    int
		base time.Duration
	}{{1, 2 * time.Second}, {2, 4 * time.Second}, {5, 32 * time.Second}, {30, 10 * time.Minute}, {1000, 10 * time.Minute}} {
		d := s.Backoff(tc.n)
		if lo, hi := tc.base*8/10, tc.base*12/10; d < lo || d > hi {
			t.Errorf("Backoff(%d) = %v, want within [%v, %v]", tc.n, d, lo, hi)
		}
	}
}

func TestIdemHashDependsOnBody(t *testing.T) {
	t.Parallel()
	a := IdemHash(Input{FirstName: "A"})
	if string(a) != string(IdemHash(Input{FirstName: "A"})) || string(a) == string(IdemHash(Input{FirstName: "B"})) {
		t.Error("IdemHash is not a function of the body")
	}
}

type nopStore struct{ Store }
type nopLeads struct{ Leads }
