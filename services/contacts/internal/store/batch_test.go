package store

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/opencrm/crm/pkg/contract/batchapi"
	"github.com/opencrm/crm/pkg/contract/propertyapi"
	"github.com/opencrm/crm/pkg/customfield"
	"github.com/opencrm/crm/pkg/fault"
	"github.com/opencrm/crm/services/contacts/internal/contacts"
)

// TestBatchCreatesAreOneStatement: a batch's creates are one INSERT (the
// count cube's statement trigger adds one key per grain for three
// contacts, not three), answered in the inputs' order with ascending ids,
// their claims taken and one contacts.imported carrying the records as
// answered;
// a unique value held elsewhere or a company gone fails the input it
// belongs to, and nothing of the batch is written.
func TestBatchCreatesAreOneStatement(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d, s := newTestStore(t)
	props := customfield.Store{DB: d, Stream: Stream}
	obj := customfield.Object{Name: propertyapi.Contacts, Table: "contacts"}
	if _, err := props.Create(ctx, obj, propertyapi.PropertyInput{Name: "erp_id", Label: "ERP id", Type: customfield.Text, Unique: true}); err != nil {
		t.Fatal(err)
	}
	var company int64
	if err := d.QueryRow(ctx, `INSERT INTO companies (name) VALUES ('Acme') RETURNING id`).Scan(&company); err != nil {
		t.Fatal(err)
	}
	gone := int64(424242)
	contact := func(last, erp string, companyID *int64) contacts.Contact {
		c := contacts.Contact{FirstName: "Ada", LastName: last, Status: contacts.StatusActive, CompanyID: companyID,
			CustomFields: map[string]any{}}
		if erp != "" {
			c.CustomFields["erp_id"] = erp
		}
		return c
	}
	create := func(cs ...contacts.Contact) ([]contacts.Contact, int, error) {
		var out []contacts.Contact
		at := -1
		_, err := s.ContactBatch(ctx, "", nil, func(w contacts.Writes) ([]contacts.Result[contacts.Contact], error) {
			var err error
			out, at, err = w.CreateContacts(cs)
			return nil, err
		})
		return out, at, err
	}
	count := func(sql string) int {
		var n int
		if err := d.QueryRow(ctx, sql).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}

	created, at, err := create(contact("A", "E-1", nil), contact("B", "", &company), contact("C", "E-3", nil))
	if err != nil || at != -1 {
		t.Fatalf("create: %v at %d", err, at)
	}
	type row struct {
		Last        string
		CompanyName *string
		Custom      map[string]any
	}
	acme := "Acme"
	want := []row{{"A", nil, map[string]any{"erp_id": "E-1"}}, {"B", &acme, map[string]any{"erp_id": nil}}, {"C", nil, map[string]any{"erp_id": "E-3"}}}
	got := make([]row, len(created))
	for i, c := range created {
		got[i] = row{c.LastName, c.CompanyName, c.CustomFields}
		if i > 0 && c.ID <= created[i-1].ID {
			t.Errorf("ids %d then %d: not in the inputs' order", created[i-1].ID, c.ID)
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("created (-want +got):\n%s", diff)
	}
	if n := count(`SELECT count(*) FROM contact_cube WHERE grain = 'a' AND n = 3`); n != 1 {
		t.Errorf("%d all-time cube keys counting 3 contacts, want 1 (one trigger firing)", n)
	}
	// One contacts.imported carrying the records as answered, not one
	// contact.created each.
	var aggregate string
	var payload []byte
	if err := d.QueryRow(ctx, `SELECT aggregate_id, payload::text FROM outbox WHERE type = $1`,
		contacts.ContactsImported).Scan(&aggregate, &payload); err != nil {
		t.Fatal(err)
	}
	if n := count(`SELECT count(*) FROM outbox WHERE type = 'contact.created'`); n != 0 {
		t.Errorf("%d contact.created events besides the contacts.imported, want 0", n)
	}
	var event contacts.Imported
	if err := json.Unmarshal(payload, &event); err != nil {
		t.Fatal(err)
	}
	wantEvent := contacts.Imported{IDs: []int64{created[0].ID, created[1].ID, created[2].ID}, Records: created}
	if diff := cmp.Diff(wantEvent, event); diff != "" || aggregate != idStr(created[0].ID) {
		t.Errorf("event of %s (-answer +payload):\n%s", aggregate, diff)
	}
	if n := count(`SELECT count(*) FROM custom_field_unique WHERE object = 'contacts' AND name = 'erp_id'`); n != 2 {
		t.Errorf("%d erp_id claims, want 2", n)
	}

	contactsBefore, claimsBefore := count(`SELECT count(*) FROM contacts`), count(`SELECT count(*) FROM custom_field_unique`)
	tests := []struct {
		name  string
		batch []contacts.Contact
		at    int
		want  *fault.Error
	}{
		{"a unique value held", []contacts.Contact{contact("D", "E-4", nil), contact("E", "E-3", nil)}, 1,
			customfield.Duplicate("erp_id", created[2].ID).(*fault.Error)},
		{"a company gone", []contacts.Contact{contact("F", "", &company), contact("G", "E-5", &gone)}, 1,
			fault.Invalid("company_id", "does not exist")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, at, err := create(tt.batch...)
			var f *fault.Error
			if !errors.As(err, &f) {
				t.Fatalf("error %v, want %v", err, tt.want)
			}
			if diff := cmp.Diff(tt.want, f); diff != "" || at != tt.at {
				t.Errorf("at %d, want %d; fault (-want +got):\n%s", at, tt.at, diff)
			}
		})
	}
	if c, u := count(`SELECT count(*) FROM contacts`), count(`SELECT count(*) FROM custom_field_unique`); c != contactsBefore || u != claimsBefore {
		t.Errorf("refused batches left %d contacts and %d claims, want %d and %d", c, u, contactsBefore, claimsBefore)
	}
}

// TestBatchAnswerIsEncodedOnce: a batch's stored answer (and Done.Raw) is
// json.Marshal of its results byte for byte, though a created contact's
// JSON is the bytes its event carries; a contact updated after its
// create, a record-less result and a company are encoded as themselves;
// a replay decodes the same results.
func TestBatchAnswerIsEncodedOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d, s := newTestStore(t)
	contact := func(last string) contacts.Contact {
		return contacts.Contact{FirstName: "Ada <&>", LastName: last, Status: contacts.StatusActive, CustomFields: map[string]any{}}
	}
	run := func(w contacts.Writes) ([]contacts.Result[contacts.Contact], error) {
		created, _, err := w.CreateContacts([]contacts.Contact{contact("A"), contact("B"), contact("C")})
		if err != nil {
			return nil, err
		}
		renamed, _, err := w.UpdateContact(created[1].ID, func(c *contacts.Contact) error { c.LastName = "B2"; return nil })
		if err != nil {
			return nil, err
		}
		return []contacts.Result[contacts.Contact]{
			{Status: batchapi.Created, Record: &created[0]},
			{Status: batchapi.Created, Record: &renamed},
			{Status: batchapi.NotFound},
			{Status: batchapi.Created, Record: &created[2]},
		}, nil
	}
	done, err := s.ContactBatch(ctx, "answer-once", "req", run)
	if err != nil {
		t.Fatal(err)
	}
	want, err := json.Marshal(done.Value)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(want), string(done.Raw)); diff != "" || done.Replayed {
		t.Errorf("replayed %v; Raw (-json.Marshal +got):\n%s", done.Replayed, diff)
	}
	var stored []byte
	if err := d.QueryRow(ctx, `SELECT result FROM idempotency_keys WHERE key = 'answer-once'`).Scan(&stored); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(want), string(stored)); diff != "" {
		t.Errorf("stored (-want +got):\n%s", diff)
	}
	var payload []byte
	if err := d.QueryRow(ctx, `SELECT payload::text FROM outbox WHERE type = $1`, contacts.ContactsImported).Scan(&payload); err != nil {
		t.Fatal(err)
	}
	var event contacts.ImportedRaw
	if err := json.Unmarshal(payload, &event); err != nil || len(event.Records) != 3 {
		t.Fatalf("event %s: %v", payload, err)
	}
	record, _ := json.Marshal(done.Value[0].Record)
	if diff := cmp.Diff(string(record), string(event.Records[0])); diff != "" {
		t.Errorf("the event's first record (-answer's record +got):\n%s", diff)
	}
	again, err := s.ContactBatch(ctx, "answer-once", "req", run)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(done.Value, again.Value); diff != "" || !again.Replayed || again.Raw != nil {
		t.Errorf("replay: replayed %v, raw %d bytes; (-fresh +replay):\n%s", again.Replayed, len(again.Raw), diff)
	}

	companies, err := s.CompanyBatch(ctx, "", nil, func(w contacts.Writes) ([]contacts.Result[contacts.Company], error) {
		cs, _, err := w.CreateCompanies([]contacts.Company{{Name: "Acme"}})
		if err != nil {
			return nil, err
		}
		return []contacts.Result[contacts.Company]{{Status: batchapi.Created, Record: &cs[0]}}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if want, _ := json.Marshal(companies.Value); string(want) != string(companies.Raw) {
		t.Errorf("companies' Raw %s, want %s", companies.Raw, want)
	}
}
