package api_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestBatchIDOnly: with id_only a created lead is answered by its id
// alone, fresh or replayed; a refusal keeps its problem body; the answer
// without id_only carries the id beside the body.
func TestBatchIDOnly(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	items := []map[string]any{
		{"key": "id-only-1", "lead": map[string]any{"first_name": "Ada", "last_name": "Lovelace"}},
		{"key": "id-only-2", "lead": map[string]any{"first_name": " ", "last_name": "Nobody"}},
	}
	type item struct {
		Status   int             `json:"status"`
		ID       int64           `json:"id"`
		Body     json.RawMessage `json:"body"`
		Replayed bool            `json:"replayed"`
	}
	read := func(r resp) []item {
		t.Helper()
		if r.status != http.StatusOK {
			t.Fatalf("batch: %d %s", r.status, r.body)
		}
		var env struct {
			Data []item `json:"data"`
		}
		if err := json.Unmarshal(r.body, &env); err != nil {
			t.Fatal(err)
		}
		return env.Data
	}
	first := read(e.postBatch(map[string]any{"items": items, "id_only": true}, false))
	if first[0].Status != http.StatusCreated || first[0].ID <= 0 || first[0].Body != nil || first[0].Replayed {
		t.Errorf("created item: %+v %s", first[0], first[0].Body)
	}
	if first[1].Status != http.StatusUnprocessableEntity || first[1].ID != 0 || first[1].Body == nil {
		t.Errorf("refused item: %+v", first[1])
	}
	again := read(e.postBatch(map[string]any{"items": items[:1], "id_only": true}, false))
	if diff := cmp.Diff([]item{{Status: http.StatusCreated, ID: first[0].ID, Replayed: true}}, again); diff != "" {
		t.Errorf("replay (-want +got):\n%s", diff)
	}
	full := read(e.postBatch(map[string]any{"items": items[:1]}, false))
	if full[0].ID != first[0].ID || full[0].Body == nil || !full[0].Replayed {
		t.Errorf("without id_only: %+v %s", full[0], full[0].Body)
	}
}
