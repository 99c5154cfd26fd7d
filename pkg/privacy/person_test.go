package privacy

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"

	"github.com/opencrm/crm/pkg/contract/privacyapi"
	"github.com/opencrm/crm/pkg/fault"
)

type doc struct {
	Records []int64 `json:"records"`
}

// people is a Person part over one address whose records are 3 and 5;
// asked is the address its functions were last called with.
func people(asked *string) Person[doc] {
	return Person[doc]{
		Object: "people",
		Read: func(_ context.Context, email string) (doc, []int64, error) {
			*asked = email
			return doc{Records: []int64{3, 5}}, []int64{3, 5}, nil
		},
		Delete: func(_ context.Context, _ pgx.Tx, email string) (Erasure, error) {
			*asked = email
			return Erasure{IDs: []int64{3, 5}, Cleared: []int64{9}, Notes: 2, Tasks: 1, History: 7, Events: 4}, nil
		},
		Found: func(ids []int64) privacyapi.Found { return privacyapi.Found{ContactIDs: ids} },
	}
}

// TestPersonExport: the document is the part's data, the records' ids go
// to the later phases, and the address is trimmed.
func TestPersonExport(t *testing.T) {
	t.Parallel()
	var asked string
	got, err := people(&asked).Export(context.Background(), privacyapi.Subject{Email: "  ann@example.com "})
	if err != nil {
		t.Fatal(err)
	}
	want := privacyapi.ExportPart{Found: privacyapi.Found{ContactIDs: []int64{3, 5}}, Data: json.RawMessage(`{"records":[3,5]}`)}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("export (-want +got):\n%s", diff)
	}
	if asked != "ann@example.com" {
		t.Errorf("read %q, want the trimmed address", asked)
	}
}

// TestPersonErase: the receipt counts the records erased and redacted
// under the part's object.
func TestPersonErase(t *testing.T) {
	t.Parallel()
	var asked string
	got, err := people(&asked).Erase(context.Background(), nil, privacyapi.Subject{Email: "ann@example.com"})
	if err != nil {
		t.Fatal(err)
	}
	want := privacyapi.ErasePart{
		Found: privacyapi.Found{ContactIDs: []int64{3, 5}},
		Receipt: privacyapi.Receipt{
			Erased:   map[string]int64{"people": 2, "notes": 2, "tasks": 1},
			Redacted: map[string]int64{"people": 1, "history": 7, "events": 4},
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("erase (-want +got):\n%s", diff)
	}
}

// TestPersonWithoutAddress: a subject without an address reaches no
// store and is an invalid email.
func TestPersonWithoutAddress(t *testing.T) {
	t.Parallel()
	asked := "untouched"
	p := people(&asked)
	_, exportErr := p.Export(context.Background(), privacyapi.Subject{Email: " "})
	_, eraseErr := p.Erase(context.Background(), nil, privacyapi.Subject{})
	want := fault.Invalid("email", "is required")
	for _, err := range []error{exportErr, eraseErr} {
		var got *fault.Error
		if !errors.As(err, &got) {
			t.Fatalf("err = %v, want %v", err, want)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("error (-want +got):\n%s", diff)
		}
	}
	if asked != "untouched" {
		t.Errorf("the store was asked about %q", asked)
	}
}
