package api

import "testing"

func TestOriginAllowed(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name           string
		origin         string
		global, perKey []string
		want           bool
	}{
		{"no lists", "https://a.example", nil, nil, true},
		{"per key match", "https://a.example", nil, []string{"https://a.example"}, true},
		{"per key case and slash", "HTTPS://A.example", nil, []string{"https://a.example/"}, true},
		{"global match", "https://g.example", []string{"https://g.example"}, []string{"https://a.example"}, true},
		{"wildcard", "https://x.example", nil, []string{"*"}, true},
		{"not listed", "https://x.example", []string{"https://g.example"}, []string{"https://a.example"}, false},
		{"null origin", "null", nil, []string{"https://a.example"}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := originAllowed(tc.origin, tc.global, tc.perKey); got != tc.want {
				t.Errorf("originAllowed(%q) = %v, want %v", tc.origin, got, tc.want)
			}
		})
	}
}
