package bulkhttp

import (
	"encoding/json"
	"net/http/httptest"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/opencrm/crm/pkg/contract/batchapi"
	"github.com/opencrm/crm/pkg/contract/route"
)

// An answer from done.Raw is, byte for byte and header for header, the
// answer encoded from done.Value.
func TestAnswerRawIsTheEncodedAnswer(t *testing.T) {
	t.Parallel()
	type rec struct {
		ID   int64  `json:"id"`
		Note string `json:"note"`
	}
	value := []batchapi.Result[rec]{
		{Status: batchapi.Created, Record: &rec{ID: 1, Note: "<b>&</b> \u2028"}},
		{Status: batchapi.NotFound},
	}
	raw, err := json.Marshal(value)
	if err != nil {
		t.Fatal(err)
	}
	for _, msg := range []string{"contacts upserted", "", `"<quoted>"`} {
		rt := route.Route{Message: msg}
		for _, replayed := range []bool{false, true} {
			enc, fromRaw := httptest.NewRecorder(), httptest.NewRecorder()
			answer(enc, rt, Done[rec]{Value: value, Replayed: replayed})
			answer(fromRaw, rt, Done[rec]{Value: value, Replayed: replayed, Raw: raw})
			if diff := cmp.Diff(enc.Body.String(), fromRaw.Body.String()); diff != "" {
				t.Errorf("message %q body (-want +got):\n%s", msg, diff)
			}
			if diff := cmp.Diff(enc.Result().Header, fromRaw.Result().Header); diff != "" {
				t.Errorf("message %q headers (-want +got):\n%s", msg, diff)
			}
			if enc.Code != fromRaw.Code {
				t.Errorf("status %d, want %d", fromRaw.Code, enc.Code)
			}
		}
	}
}
