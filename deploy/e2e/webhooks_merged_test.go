package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/opencrm/crm/pkg/contract/webhooksapi"
)

// TestWebhooksDeliverMerges: merging two contacts through the gateway
// sends a subscription to contact.merged one signed delivery naming the
// merge, the survivor, the merged id and the object, and the feed holds
// the same event.
func TestWebhooksDeliverMerges(t *testing.T) {
	t.Parallel()
	adm := admin(t)
	rc := newReceiver(t)
	_, secret := subscribe(t, adm, rc.srv.URL+"/hooks", webhooksapi.ContactMerged)
	tag := uniq("hookmerge")
	keep := must(t, http.StatusCreated)(adm.Do("POST", "/contacts", map[string]any{
		"first_name": "Ada", "last_name": "Lovelace " + tag, "email": tag + "@one.test"})).ID()
	gone := must(t, http.StatusCreated)(adm.Do("POST", "/contacts", map[string]any{
		"first_name": "Ada", "last_name": "Lovelace " + tag, "email": tag + "@two.test"})).ID()
	m := must(t, http.StatusOK)(adm.Do("POST", fmt.Sprintf("/contacts/%d/merge", keep), map[string]any{"merge_ids": []int64{gone}}))
	mergeID := int64(m.Data()["id"].(float64))

	want := webhooksapi.MergedRecords{MergeID: mergeID, Survivor: keep, Merged: []int64{gone}, Object: "contact"}
	ours := func(d received) bool {
		var got webhooksapi.MergedRecords
		return d.Event.Type == webhooksapi.ContactMerged && json.Unmarshal(d.Event.Data, &got) == nil && got.MergeID == mergeID
	}
	var got []received
	eventually(t, "the contact.merged delivery", func() error {
		if got = rc.deliveries(ours); len(got) == 0 {
			return fmt.Errorf("no delivery of merge %d", mergeID)
		}
		return nil
	})
	if len(got) != 1 {
		t.Fatalf("%d deliveries of merge %d", len(got), mergeID)
	}
	verify(t, secret, got[0])
	var data webhooksapi.MergedRecords
	if err := json.Unmarshal(got[0].Event.Data, &data); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, data); diff != "" {
		t.Errorf("delivered data (-want +got):\n%s", diff)
	}

	feed := must(t, http.StatusOK)(adm.Do("GET", "/events?type=contact.merged&limit=1000", nil))
	var found bool
	for _, e := range feed.JSON["data"].([]any) {
		ev := e.(map[string]any)
		if ev["id"] == got[0].ID {
			found = true
			if diff := cmp.Diff(map[string]any{"merge_id": float64(mergeID), "survivor_id": float64(keep),
				"merged_ids": []any{float64(gone)}, "object": "contact"}, ev["data"]); diff != "" {
				t.Errorf("feed data (-want +got):\n%s", diff)
			}
		}
	}
	if !found {
		t.Errorf("the feed lacks %s", got[0].ID)
	}
}
