package webhooksapi_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/opencrm/crm/pkg/contract/contactsapi"
	"github.com/opencrm/crm/pkg/contract/webhooksapi"
)

// TestMergedRecordsCarriesTheStreamData: what webhooks sends of a merge
// is contacts' stream data plus the object: every member of
// contactsapi.MergedEvent reads back as MergedRecords' (a field added
// there must be added here, or the document would not describe it).
func TestMergedRecordsCarriesTheStreamData(t *testing.T) {
	t.Parallel()
	stream := contactsapi.MergedEvent{MergeID: 3, Survivor: 42, Merged: []int64{57, 58}}
	b, err := json.Marshal(stream)
	if err != nil {
		t.Fatal(err)
	}
	var sent map[string]any
	if err := json.Unmarshal(b, &sent); err != nil {
		t.Fatal(err)
	}
	sent["object"] = "contact"
	b, _ = json.Marshal(sent)
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var got webhooksapi.MergedRecords
	if err := dec.Decode(&got); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	want := webhooksapi.MergedRecords{MergeID: 3, Survivor: 42, Merged: []int64{57, 58}, Object: "contact"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	for _, typ := range []string{webhooksapi.ContactMerged, webhooksapi.CompanyMerged} {
		if _, ok := webhooksapi.Payload(typ).(webhooksapi.MergedEvent); !ok || !webhooksapi.ValidEventType(typ) {
			t.Errorf("%s: payload %T, subscribable %v", typ, webhooksapi.Payload(typ), webhooksapi.ValidEventType(typ))
		}
	}
	if webhooksapi.ContactMerged != contactsapi.EventContactMerged || webhooksapi.CompanyMerged != contactsapi.EventCompanyMerged {
		t.Error("the webhook types differ from the types contacts publishes")
	}
}
