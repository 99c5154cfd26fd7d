package contactsapi_test

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/opencrm/crm/pkg/contract/contactsapi"
)

// TestImportedRawIsImported: what a writer holding the records' JSON
// writes (ImportedRaw, Encoded as json.Marshal would) is the typed event
// (Imported), and what a release before records wrote reads the same way
// with no records.
func TestImportedRawIsImported(t *testing.T) {
	t.Parallel()
	email := "ada@example.com"
	want := contactsapi.Imported{IDs: []int64{4, 5}, Records: []contactsapi.Contact{
		{ID: 4, FirstName: "Ada", LastName: "Lovelace", Email: &email, Status: "active"},
		{ID: 5, FirstName: "Grace", LastName: "Hopper", Status: "inactive"},
	}}
	raw := contactsapi.ImportedRaw{IDs: want.IDs}
	for _, c := range want.Records {
		b, err := json.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		raw.Records = append(raw.Records, b)
	}
	data, err := json.Marshal(raw)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(data), string(raw.Encoded())); diff != "" {
		t.Errorf("Encoded (-json.Marshal +got)\n%s", diff)
	}
	var got contactsapi.Imported
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("decoded (-want +got)\n%s", diff)
	}

	var idsOnly contactsapi.Imported
	if err := json.Unmarshal([]byte(`{"ids":[4,5]}`), &idsOnly); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(contactsapi.Imported{IDs: []int64{4, 5}}, idsOnly); diff != "" {
		t.Errorf("a CSV import's event (-want +got)\n%s", diff)
	}
	for _, r := range []contactsapi.ImportedRaw{{IDs: []int64{4, 5}}, {}} {
		want, _ := json.Marshal(r)
		if diff := cmp.Diff(string(want), string(r.Encoded())); diff != "" {
			t.Errorf("Encoded of %v (-json.Marshal +got)\n%s", r, diff)
		}
	}
}

// TestCarried: the records are used only when there is one per id.
func TestCarried(t *testing.T) {
	t.Parallel()
	one, two := json.RawMessage(`{"id":1}`), json.RawMessage(`{"id":2}`)
	tests := []struct {
		name string
		in   contactsapi.ImportedRaw
		want []json.RawMessage
	}{
		{"one per id", contactsapi.ImportedRaw{IDs: []int64{1, 2}, Records: []json.RawMessage{one, two}}, []json.RawMessage{one, two}},
		{"none (a CSV import)", contactsapi.ImportedRaw{IDs: []int64{1, 2}}, nil},
		{"fewer than the ids", contactsapi.ImportedRaw{IDs: []int64{1, 2}, Records: []json.RawMessage{one}}, nil},
		{"more than the ids", contactsapi.ImportedRaw{IDs: []int64{1}, Records: []json.RawMessage{one, two}}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if diff := cmp.Diff(tt.want, tt.in.Carried()); diff != "" {
				t.Errorf("Carried (-want +got)\n%s", diff)
			}
		})
	}
}
