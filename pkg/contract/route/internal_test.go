package route_test

import (
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/opencrm/crm/pkg/contract/route"
)

// At takes method and path from the pattern constant a service mounts.
func TestInternalAt(t *testing.T) {
	t.Parallel()
	got := route.At("GET /internal/deals/{id}/merge", route.Internal{Service: "deals", Summary: "Merge data"})
	want := route.Internal{Method: http.MethodGet, Path: "/internal/deals/{id}/merge", Service: "deals", Summary: "Merge data"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("declaration (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff("GET /internal/deals/{id}/merge", got.Pattern()); diff != "" {
		t.Errorf("pattern (-want +got):\n%s", diff)
	}
	if got.SuccessStatus() != http.StatusOK || (route.Internal{Status: http.StatusCreated}).SuccessStatus() != http.StatusCreated {
		t.Errorf("success status: %d, want 200 by default and the declared one otherwise", got.SuccessStatus())
	}
}

// A pattern that is not "METHOD /internal/..." is a mistake in a
// declaration, refused when the contract package loads.
func TestInternalAtRefusesOtherPatterns(t *testing.T) {
	t.Parallel()
	for _, p := range []string{"/internal/contacts", "GET /contacts", "get /internal/contacts", " /internal/x", ""} {
		t.Run(p, func(t *testing.T) {
			t.Parallel()
			defer func() {
				if recover() == nil {
					t.Errorf("At(%q) did not panic", p)
				}
			}()
			route.At(p, route.Internal{})
		})
	}
}

// Served keeps one context's declarations, in order.
func TestInternalServed(t *testing.T) {
	t.Parallel()
	all := []route.Internal{
		route.At("POST /internal/merges/{id}", route.Internal{Service: "deals"}),
		route.At("GET /internal/leads/{id}", route.Internal{Service: "leads"}),
		route.At("GET /internal/deals/{id}", route.Internal{Service: "deals"}),
	}
	var got []string
	for _, r := range route.Served("deals", all) {
		got = append(got, r.Pattern())
	}
	if diff := cmp.Diff([]string{"POST /internal/merges/{id}", "GET /internal/deals/{id}"}, got); diff != "" {
		t.Errorf("served (-want +got):\n%s", diff)
	}
}
