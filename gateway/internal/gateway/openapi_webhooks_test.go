package gateway

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/opencrm/crm/pkg/contract/webhooksapi"
)

// TestOpenAPIMergedWebhooks: contact.merged and company.merged are typed
// like every subscribable event: a webhooks entry each whose body is
// MergedEvent, reached from the feed's Event through the discriminator,
// its data the ids and the object (or ErasedData after an erasure).
func TestOpenAPIMergedWebhooks(t *testing.T) {
	t.Parallel()
	d := doc(t)
	s := at(d, "components", "schemas")
	ref := map[string]any{"$ref": "#/components/schemas/MergedEvent"}
	tests := []struct {
		name string
		got  any
		want any
	}{
		{"contact.merged body", at(d, "webhooks", webhooksapi.ContactMerged, "post", "requestBody", "content", "application/json", "schema"), ref},
		{"company.merged body", at(d, "webhooks", webhooksapi.CompanyMerged, "post", "requestBody", "content", "application/json", "schema"), ref},
		{"operation ids", []any{at(d, "webhooks", webhooksapi.ContactMerged, "post", "operationId"),
			at(d, "webhooks", webhooksapi.CompanyMerged, "post", "operationId")}, []any{"webhook_contact_merged", "webhook_company_merged"}},
		{"types", at(s, "MergedEvent", "properties", "type", "enum"), []any{webhooksapi.ContactMerged, webhooksapi.CompanyMerged}},
		{"feed mapping", []any{at(s, "Event", "discriminator", "mapping", webhooksapi.ContactMerged),
			at(s, "Event", "discriminator", "mapping", webhooksapi.CompanyMerged)}, []any{ref["$ref"], ref["$ref"]}},
		{"data, or erased", at(s, "MergedEvent", "properties", "data", "anyOf"), []any{
			map[string]any{"$ref": "#/components/schemas/MergedRecords"}, map[string]any{"$ref": "#/components/schemas/ErasedData"}}},
		{"data members", at(s, "MergedRecords", "required"), []any{"merge_id", "survivor_id", "merged_ids", "object"}},
		{"object", at(s, "MergedRecords", "properties", "object", "enum"), []any{"contact", "company"}},
		{"merged ids", at(s, "MergedRecords", "properties", "merged_ids", "items", "type"), "integer"},
	}
	for _, tc := range tests {
		if diff := cmp.Diff(tc.want, tc.got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, diff)
		}
	}
	variants, _ := at(s, "Event", "oneOf").([]any)
	if !slices.ContainsFunc(variants, func(v any) bool { return cmp.Equal(v, any(ref)) }) {
		t.Errorf("Event's variants %v lack MergedEvent", at(s, "Event", "oneOf"))
	}
}
