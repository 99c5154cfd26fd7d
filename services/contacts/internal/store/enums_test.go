package store

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/opencrm/crm/pkg/contract/propertyapi"
	"github.com/opencrm/crm/pkg/customfield"
)

// TestEnumsFollowCustomFields: contacts.enums, which list filters on an
// enum read (migration 014), holds exactly the contact's enum fields'
// values after an insert, an update of custom_fields, a plain write of
// enums itself and the deletion of a field, and writes no history entry
// of its own.
func TestEnumsFollowCustomFields(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d, _ := newTestStore(t)
	props := customfield.Store{DB: d, Stream: Stream}
	obj := customfield.Object{Name: propertyapi.Contacts, Table: "contacts"}
	for _, in := range []propertyapi.PropertyInput{
		{Name: "tier", Label: "Tier", Type: customfield.Enum, Options: []propertyapi.Option{{Value: "gold"}, {Value: "silver"}}},
		{Name: "region", Label: "Region", Type: customfield.Enum, Options: []propertyapi.Option{{Value: "emea"}}},
		{Name: "code", Label: "Code", Type: customfield.Text},
	} {
		if _, err := props.Create(ctx, obj, in); err != nil {
			t.Fatal(err)
		}
	}
	var id int64
	if err := d.QueryRow(ctx, `INSERT INTO contacts (first_name, last_name, status, custom_fields)
		VALUES ('A', 'B', 'active', '{"tier": "gold", "region": "emea", "code": "X1"}') RETURNING id`).Scan(&id); err != nil {
		t.Fatal(err)
	}
	enums := func() string {
		t.Helper()
		var s string
		if err := d.QueryRow(ctx, `SELECT enums::text FROM contacts WHERE id = $1`, id).Scan(&s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	steps := []struct{ name, sql, want string }{
		{"insert", ``, `{"tier": "gold", "region": "emea"}`},
		{"update", `UPDATE contacts SET custom_fields = '{"tier": "silver", "code": "X2"}' WHERE id = $1`, `{"tier": "silver"}`},
		{"enums written directly", `UPDATE contacts SET enums = '{"tier": "gold"}' WHERE id = $1`, `{"tier": "silver"}`},
		{"other column", `UPDATE contacts SET first_name = 'C' WHERE id = $1`, `{"tier": "silver"}`},
	}
	for _, st := range steps {
		if st.sql != "" {
			if _, err := d.Exec(ctx, st.sql, id); err != nil {
				t.Fatalf("%s: %v", st.name, err)
			}
		}
		if diff := cmp.Diff(st.want, enums()); diff != "" {
			t.Errorf("%s: enums (-want +got):\n%s", st.name, diff)
		}
	}
	if err := props.Delete(ctx, obj, "tier"); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(`{}`, enums()); diff != "" {
		t.Errorf("field deleted: enums (-want +got):\n%s", diff)
	}
	var tracked int
	if err := d.QueryRow(ctx, `SELECT count(*) FROM history WHERE record_id = $1 AND (before ? 'enums' OR after ? 'enums')`, id).Scan(&tracked); err != nil {
		t.Fatal(err)
	}
	if tracked != 0 {
		t.Errorf("%d history entries record enums, a derived column", tracked)
	}
}
