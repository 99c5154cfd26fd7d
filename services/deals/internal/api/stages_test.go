package api_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestStagesSeededInOrder(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var got []stageJSON
	e.data(e.do("GET", "/deal-stages", e.user, nil), http.StatusOK, &got)
	want := []stageJSON{
		{Name: "Prospecting", Position: 1, Outcome: "open"},
		{Name: "Qualification", Position: 2, Outcome: "open"},
		{Name: "Proposal", Position: 3, Outcome: "open"},
		{Name: "Negotiation", Position: 4, Outcome: "open"},
		{Name: "Closed Won", Position: 5, Outcome: "won"},
		{Name: "Closed Lost", Position: 6, Outcome: "lost"},
	}
	for i := range got {
		got[i].ID = 0
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("stages (-want +got):\n%s", diff)
	}
}

func names(e *env) []string {
	e.t.Helper()
	var list []stageJSON
	e.data(e.do("GET", "/deal-stages", e.user, nil), http.StatusOK, &list)
	out := []string{}
	for i, s := range list {
		if s.Position != i+1 {
			e.t.Errorf("stage %q has position %d, want %d", s.Name, s.Position, i+1)
		}
		out = append(out, s.Name)
	}
	return out
}

func TestStageAdminLifecycle(t *testing.T) {
	t.Parallel()
	e := newEnv(t)

	var demo stageJSON
	e.data(e.do("POST", "/deal-stages", e.admin, map[string]any{"name": "Demo"}), http.StatusCreated, &demo)
	if demo.Position != 7 || demo.Outcome != "open" {
		t.Errorf("new stage = %+v, want position 7, outcome open", demo)
	}
	var early stageJSON
	e.data(e.do("POST", "/deal-stages", e.admin, map[string]any{"name": "Lead In", "position": 1}), http.StatusCreated, &early)
	if early.Position != 1 {
		t.Errorf("inserted stage position = %d, want 1", early.Position)
	}
	// Rename and move Demo to position 3.
	var moved stageJSON
	e.data(e.do("PUT", path("/deal-stages/%d", demo.ID), e.admin, map[string]any{"name": "Product Demo", "position": 3}), http.StatusOK, &moved)
	if moved.Name != "Product Demo" || moved.Position != 3 {
		t.Errorf("moved = %+v", moved)
	}
	want := []string{"Lead In", "Prospecting", "Product Demo", "Qualification", "Proposal", "Negotiation", "Closed Won", "Closed Lost"}
	if diff := cmp.Diff(want, names(e)); diff != "" {
		t.Errorf("order after move (-want +got):\n%s", diff)
	}
	// Move down to the end (clamped).
	e.data(e.do("PUT", path("/deal-stages/%d", early.ID), e.admin, map[string]any{"name": "Lead In", "position": 99}), http.StatusOK, nil)
	want = []string{"Prospecting", "Product Demo", "Qualification", "Proposal", "Negotiation", "Closed Won", "Closed Lost", "Lead In"}
	if diff := cmp.Diff(want, names(e)); diff != "" {
		t.Errorf("order after move down (-want +got):\n%s", diff)
	}
	// Delete an unused stage; positions close up.
	r := e.do("DELETE", path("/deal-stages/%d", demo.ID), e.admin, nil)
	if r.Status != http.StatusOK {
		t.Fatalf("delete unused stage: %d %s", r.Status, r.Body)
	}
	want = []string{"Prospecting", "Qualification", "Proposal", "Negotiation", "Closed Won", "Closed Lost", "Lead In"}
	if diff := cmp.Diff(want, names(e)); diff != "" {
		t.Errorf("order after delete (-want +got):\n%s", diff)
	}
	wantProblem(t, e.do("GET", path("/deal-stages/%d", demo.ID), e.user, nil), http.StatusNotFound, "not_found")
}

func TestStageInUse(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	st := e.stages()
	e.createDeal(map[string]any{"title": "Busy", "stage_id": st["Proposal"].ID})

	wantProblem(t, e.do("DELETE", path("/deal-stages/%d", st["Proposal"].ID), e.admin, nil), http.StatusConflict, "stage_in_use")
	wantProblem(t, e.do("PUT", path("/deal-stages/%d", st["Proposal"].ID), e.admin,
		map[string]any{"name": "Proposal", "outcome": "won"}), http.StatusConflict, "stage_in_use")
	// Renaming a stage in use is fine, and deals show the new name.
	e.data(e.do("PUT", path("/deal-stages/%d", st["Proposal"].ID), e.admin, map[string]any{"name": "Offer"}), http.StatusOK, nil)
	var page struct{ Data []dealJSON }
	r := e.do("GET", "/deals", e.user, nil)
	if err := jsonUnmarshal(r.Body, &page); err != nil || len(page.Data) != 1 || page.Data[0].StageName != "Offer" {
		t.Errorf("deals after rename = %s", r.Body)
	}
}

func TestStageErrors(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	st := e.stages()
	prospecting := path("/deal-stages/%d", st["Prospecting"].ID)
	tests := []struct {
		name, method, path, token string
		body                      any
		status                    int
		code                      string
		fields                    []string
	}{
		{"no token", "GET", "/deal-stages", "", nil, 401, "unauthenticated", nil},
		{"bad token", "GET", "/deal-stages", "not.a.jwt", nil, 401, "unauthenticated", nil},
		{"user create", "POST", "/deal-stages", e.user, map[string]any{"name": "X"}, 403, "forbidden", nil},
		{"user rename", "PUT", prospecting, e.user, map[string]any{"name": "X"}, 403, "forbidden", nil},
		{"user delete", "DELETE", prospecting, e.user, nil, 403, "forbidden", nil},
		{"unknown stage", "GET", "/deal-stages/999999", e.user, nil, 404, "not_found", nil},
		{"unknown stage update", "PUT", "/deal-stages/999999", e.admin, map[string]any{"name": "X"}, 404, "not_found", nil},
		{"unknown stage delete", "DELETE", "/deal-stages/999999", e.admin, nil, 404, "not_found", nil},
		{"missing name", "POST", "/deal-stages", e.admin, map[string]any{}, 422, "validation_failed", []string{"name"}},
		{"long name", "POST", "/deal-stages", e.admin, map[string]any{"name": strings.Repeat("x", 101)}, 422, "validation_failed", []string{"name"}},
		{"duplicate name", "POST", "/deal-stages", e.admin, map[string]any{"name": "proposal"}, 422, "validation_failed", []string{"name"}},
		{"bad outcome", "POST", "/deal-stages", e.admin, map[string]any{"name": "X", "outcome": "maybe"}, 422, "validation_failed", []string{"outcome"}},
		{"bad position", "POST", "/deal-stages", e.admin, map[string]any{"name": "X", "position": 0}, 422, "validation_failed", []string{"position"}},
		{"position not integer", "POST", "/deal-stages", e.admin, map[string]any{"name": "X", "position": "first"}, 422, "validation_failed", []string{"position"}},
		{"rename to existing", "PUT", prospecting, e.admin, map[string]any{"name": "Closed Won"}, 422, "validation_failed", []string{"name"}},
		{"malformed json", "POST", "/deal-stages", e.admin, "{", 400, "malformed_json", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			wantProblem(t, e.do(tc.method, tc.path, tc.token, tc.body), tc.status, tc.code, tc.fields...)
		})
	}
}
