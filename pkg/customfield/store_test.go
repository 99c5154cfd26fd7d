package customfield_test

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/opencrm/crm/pkg/contract/propertyapi"
	"github.com/opencrm/crm/pkg/customfield"
	"github.com/opencrm/crm/pkg/db"
	"github.com/opencrm/crm/pkg/fault"
	"github.com/opencrm/crm/pkg/list/listsql"
	"github.com/opencrm/crm/pkg/outbox"
	"github.com/opencrm/crm/pkg/patch"
	"github.com/opencrm/crm/pkg/testdb"
)

var things = customfield.Object{Name: "contacts", Table: "things", Builtins: []string{"email", "first_name"}}

func migrate(ctx context.Context, d *db.DB) error {
	if err := customfield.Migrate(ctx, d); err != nil {
		return err
	}
	if err := outbox.Migrate(ctx, d); err != nil {
		return err
	}
	_, err := d.Exec(ctx, `CREATE TABLE IF NOT EXISTS things (id bigserial PRIMARY KEY, custom_fields jsonb NOT NULL DEFAULT '{}')`)
	return err
}

func newStore(t *testing.T) customfield.Store {
	t.Helper()
	d := testdb.New(t, "customfieldtest", migrate, customfield.Migrations, outbox.Migrations)
	return customfield.Store{DB: d, Stream: outbox.Stream("contacts")}
}

func faultOf(t *testing.T, err error) *fault.Error {
	t.Helper()
	var f *fault.Error
	if !errors.As(err, &f) {
		t.Fatalf("error %v is not a fault", err)
	}
	return f
}

func TestCreateRefusesBadDefinitions(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := context.Background()
	if _, err := s.Create(ctx, things, propertyapi.PropertyInput{Name: "erp_id", Label: "ERP id", Type: "text"}); err != nil {
		t.Fatal(err)
	}
	long := "a"
	for len(long) < 64 {
		long += "b"
	}
	tests := []struct {
		name string
		in   propertyapi.PropertyInput
		want []fault.Field
	}{
		{"built-in", propertyapi.PropertyInput{Name: "email", Label: "E", Type: "text"}, []fault.Field{{Field: "name", Message: "is a built-in field of contacts"}}},
		{"reserved", propertyapi.PropertyInput{Name: "custom_fields", Label: "E", Type: "text"}, []fault.Field{{Field: "name", Message: "is reserved"}}},
		{"upper-case", propertyapi.PropertyInput{Name: "Erp", Label: "E", Type: "text"}, []fault.Field{{Field: "name", Message: "must start with a lower-case letter and hold only lower-case letters, digits and _ (at most 63)"}}},
		{"too long", propertyapi.PropertyInput{Name: long, Label: "E", Type: "text"}, []fault.Field{{Field: "name", Message: "must start with a lower-case letter and hold only lower-case letters, digits and _ (at most 63)"}}},
		{"already used", propertyapi.PropertyInput{Name: "erp_id", Label: "E", Type: "text"}, []fault.Field{{Field: "name", Message: "is already used by another custom field of contacts"}}},
		{"enum without options", propertyapi.PropertyInput{Name: "tier", Label: "Tier", Type: "enum"}, []fault.Field{{Field: "options", Message: "an enum field needs at least one option"}}},
		{"unique boolean", propertyapi.PropertyInput{Name: "vip", Label: "VIP", Type: "boolean", Unique: true}, []fault.Field{{Field: "unique", Message: "applies only to text, email, phone and number fields"}}},
		{"unknown type", propertyapi.PropertyInput{Name: "x", Label: "X", Type: "float"}, []fault.Field{{Field: "type", Message: "must be one of text, textarea, number, date, datetime, boolean, enum, multi_enum, url, email, phone, user"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := s.Create(ctx, things, tt.in)
			f := faultOf(t, err)
			if diff := cmp.Diff(tt.want, f.Fields); diff != "" || f.Kind != fault.KindInvalid {
				t.Errorf("kind %v, fields (-want +got):\n%s", f.Kind, diff)
			}
		})
	}
	defs, err := s.List(ctx, "contacts")
	if err != nil || len(defs) != 1 {
		t.Fatalf("refused definitions were stored: %d, %v", len(defs), err)
	}
}

func TestAtMost250Definitions(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := context.Background()
	for i := range customfield.MaxDefinitions {
		if _, err := s.Create(ctx, things, propertyapi.PropertyInput{Name: "f" + strconv.Itoa(i), Label: "F", Type: "text"}); err != nil {
			t.Fatal(err)
		}
	}
	_, err := s.Create(ctx, things, propertyapi.PropertyInput{Name: "one_more", Label: "F", Type: "text"})
	want := []fault.Field{{Field: "name", Message: "contacts already has 250 custom fields, the most allowed"}}
	if diff := cmp.Diff(want, faultOf(t, err).Fields); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// write stores a record's values as a context's write does: checked,
// claimed and saved in one transaction.
func write(t *testing.T, s customfield.Store, id int64, in string) error {
	t.Helper()
	ctx := context.Background()
	return s.DB.InTx(ctx, func(tx pgx.Tx) error {
		defs, err := customfield.Definitions(ctx, tx, things.Name)
		if err != nil {
			return err
		}
		var old customfield.Values
		if id != 0 {
			if err := tx.QueryRow(ctx, `SELECT custom_fields FROM things WHERE id = $1`, id).Scan(&old); err != nil {
				return err
			}
		}
		vals, err := customfield.Check(ctx, defs, old, input(t, in), nil)
		if err != nil {
			return err
		}
		if id == 0 {
			err = tx.QueryRow(ctx, `INSERT INTO things (custom_fields) VALUES ($1) RETURNING id`, vals).Scan(&id)
		} else {
			_, err = tx.Exec(ctx, `UPDATE things SET custom_fields = $2 WHERE id = $1`, id, vals)
		}
		if err != nil {
			return err
		}
		return customfield.Claim(ctx, tx, things.Name, id, defs, vals)
	})
}

func TestUniqueValuesAreExternalIDs(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := context.Background()
	d, err := s.Create(ctx, things, propertyapi.PropertyInput{Name: "erp_id", Label: "ERP id", Type: "number", Unique: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := write(t, s, 0, `{"erp_id": "10.50"}`); err != nil {
		t.Fatal(err)
	}
	err = write(t, s, 0, `{"erp_id": 10.5}`)
	f := faultOf(t, err)
	if diff := cmp.Diff([]fault.Field{{Field: "custom_fields.erp_id", Message: "is already held by another record"}}, f.Fields); diff != "" || f.Kind != fault.KindConflict || f.Extra["existing_id"] != int64(1) {
		t.Errorf("kind %v extra %v, fields (-want +got):\n%s", f.Kind, f.Extra, diff)
	}
	var n int
	if err := s.DB.QueryRow(ctx, `SELECT count(*) FROM things`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("the refused record was written: %d rows, %v", n, err)
	}
	id, found, err := customfield.Lookup(ctx, s.DB, things.Name, d, "10.5000")
	if err != nil || !found || id != 1 {
		t.Errorf("Lookup = %d, %v, %v; want 1", id, found, err)
	}
	// The holder changes its value: the old one is free again.
	if err := write(t, s, 1, `{"erp_id": 11}`); err != nil {
		t.Fatal(err)
	}
	if err := write(t, s, 0, `{"erp_id": 10.5}`); err != nil {
		t.Errorf("a released value is refused: %v", err)
	}
}

// TestClaimsOfNewRecordsAndLookupMany: ClaimNew claims the unique values
// of records just inserted with one INSERT (none when they hold none),
// naming the first record refused and the holder; LookupMany answers
// many external ids as Lookup answers each.
func TestClaimsOfNewRecordsAndLookupMany(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := context.Background()
	erp, err := s.Create(ctx, things, propertyapi.PropertyInput{Name: "erp_id", Label: "ERP id", Type: "number", Unique: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Create(ctx, things, propertyapi.PropertyInput{Name: "code", Label: "Code", Type: "text", Unique: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Create(ctx, things, propertyapi.PropertyInput{Name: "note", Label: "Note", Type: "text"}); err != nil {
		t.Fatal(err)
	}
	defs, err := customfield.Definitions(ctx, s.DB, things.Name)
	if err != nil {
		t.Fatal(err)
	}
	claims := func() []string {
		rows, err := s.DB.Query(ctx, `SELECT name || '=' || value || '@' || record_id FROM custom_field_unique ORDER BY 1`)
		if err != nil {
			t.Fatal(err)
		}
		got, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	type refusal struct {
		At       int
		Field    string
		Existing any
	}
	tests := []struct {
		name   string
		ids    []int64
		values []customfield.Values
		want   *refusal
		claims []string // afterwards, when committed
	}{
		{"no unique value", []int64{1, 2}, []customfield.Values{{"note": "x"}, {}}, nil, nil},
		{"all free", []int64{3, 4}, []customfield.Values{{"erp_id": "10.5", "code": "a"}, {"erp_id": "7", "note": "y"}}, nil,
			[]string{"code=a@3", "erp_id=10.5@3", "erp_id=7@4"}},
		{"held by a stored record", []int64{5, 6, 7}, []customfield.Values{{"code": "b"}, {"erp_id": "8", "code": "a"}, {"erp_id": "7"}},
			&refusal{At: 1, Field: "custom_fields.code", Existing: int64(3)}, nil},
		{"two of the batch share one", []int64{8, 9}, []customfield.Values{{"code": "c"}, {"code": "c"}},
			&refusal{At: 1, Field: "custom_fields.code", Existing: int64(8)}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var at int
			var claimErr error
			statements := 0
			err := s.DB.InTx(ctx, func(tx pgx.Tx) error {
				at, claimErr = customfield.ClaimNew(ctx, countQueries{tx, &statements}, things.Name, defs, tt.ids, tt.values)
				return claimErr
			})
			switch {
			case tt.want == nil && err != nil:
				t.Fatalf("ClaimNew: %v", err)
			case tt.want == nil:
				if at != -1 {
					t.Errorf("at = %d, want -1", at)
				}
				if diff := cmp.Diff(tt.claims, claims()); diff != "" && tt.claims != nil {
					t.Errorf("claims (-want +got):\n%s", diff)
				}
			default:
				f := faultOf(t, claimErr)
				got := refusal{At: at, Existing: f.Extra["existing_id"]}
				if len(f.Fields) == 1 && f.Kind == fault.KindConflict {
					got.Field = f.Fields[0].Field
				}
				if diff := cmp.Diff(*tt.want, got); diff != "" {
					t.Errorf("refusal (-want +got):\n%s", diff)
				}
			}
			wantStatements := 1
			switch {
			case tt.name == "no unique value":
				wantStatements = 0
			case tt.want != nil:
				wantStatements = 2 // the INSERT, then the holder of the first refused
			}
			if statements != wantStatements {
				t.Errorf("%d statements, want %d", statements, wantStatements)
			}
		})
	}
	if diff := cmp.Diff([]string{"code=a@3", "erp_id=10.5@3", "erp_id=7@4"}, claims()); diff != "" {
		t.Errorf("claims after the refusals (-want +got):\n%s", diff)
	}

	got, err := customfield.LookupMany(ctx, s.DB, things.Name, erp, []string{"10.50", "7", "10.5000", "99", "not a number"})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]int64{"10.50": 3, "7": 4, "10.5000": 3}, got); diff != "" {
		t.Errorf("LookupMany (-want +got):\n%s", diff)
	}
	for _, v := range []string{"10.50", "7", "99", "not a number"} {
		id, found, err := customfield.Lookup(ctx, s.DB, things.Name, erp, v)
		if err != nil {
			t.Fatal(err)
		}
		if want, ok := got[v]; found != ok || id != want {
			t.Errorf("Lookup(%q) = %d, %v; LookupMany has %d, %v", v, id, found, want, ok)
		}
	}
	if got, err := customfield.LookupMany(ctx, s.DB, things.Name, erp, nil); err != nil || len(got) != 0 {
		t.Errorf("LookupMany of nothing = %v, %v", got, err)
	}
}

// countQueries counts the statements sent through it.
type countQueries struct {
	pgx.Tx
	n *int
}

func (c countQueries) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	*c.n++
	return c.Tx.Exec(ctx, sql, args...)
}

func (c countQueries) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	*c.n++
	return c.Tx.Query(ctx, sql, args...)
}

func (c countQueries) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	*c.n++
	return c.Tx.QueryRow(ctx, sql, args...)
}

func TestDefinitionChangesThatValuesContradict(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := context.Background()
	for _, in := range []propertyapi.PropertyInput{
		{Name: "code", Label: "Code", Type: "text"},
		{Name: "tier", Label: "Tier", Type: "enum", Options: []propertyapi.Option{{Value: "gold"}, {Value: "silver"}}},
	} {
		if _, err := s.Create(ctx, things, in); err != nil {
			t.Fatal(err)
		}
	}
	for _, in := range []string{`{"code": "a", "tier": "gold"}`, `{"code": "a"}`} {
		if err := write(t, s, 0, in); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name, field string
		in          propertyapi.PropertyUpdate
		code        string
	}{
		{"type change with values", "code", propertyapi.PropertyUpdate{Type: patch.Of("number")}, "property_has_values"},
		{"remove a held option", "tier", propertyapi.PropertyUpdate{Options: patch.Of([]propertyapi.Option{{Value: "silver"}})}, "option_in_use"},
		{"unique over duplicates", "code", propertyapi.PropertyUpdate{Unique: patch.Of(true)}, "duplicate_values"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := s.Update(ctx, things, tt.field, tt.in)
			if f := faultOf(t, err); f.Kind != fault.KindConflict || f.Code != tt.code {
				t.Errorf("got %v %q, want conflict %q", f.Kind, f.Code, tt.code)
			}
		})
	}
	// Archiving a held option and changing the type of an unused field work.
	if _, err := s.Update(ctx, things, "tier", propertyapi.PropertyUpdate{Options: patch.Of([]propertyapi.Option{{Value: "gold", Archived: true}, {Value: "silver"}})}); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, things, "code"); err != nil {
		t.Fatal(err)
	}
	var held int
	if err := s.DB.QueryRow(ctx, `SELECT count(*) FROM things WHERE custom_fields ? 'code'`).Scan(&held); err != nil || held != 0 {
		t.Errorf("deleting a definition left %d values (%v)", held, err)
	}
	var events []string
	rows, err := s.DB.Query(ctx, `SELECT type FROM outbox WHERE stream = $1 ORDER BY id`, s.Stream)
	if err == nil {
		events, err = pgx.CollectRows(rows, pgx.RowTo[string])
	}
	want := []string{"property.created", "property.created", "property.updated", "property.deleted"}
	if diff := cmp.Diff(want, events); diff != "" || err != nil {
		t.Errorf("events (-want +got):\n%s %v", diff, err)
	}
}

func TestFiltersAndSorts(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := context.Background()
	for _, in := range []propertyapi.PropertyInput{
		{Name: "tier", Label: "Tier", Type: "enum", Options: []propertyapi.Option{{Value: "gold"}, {Value: "silver"}}},
		{Name: "regions", Label: "Regions", Type: "multi_enum", Options: []propertyapi.Option{{Value: "emea"}, {Value: "apac"}}},
		{Name: "budget", Label: "Budget", Type: "number"},
		{Name: "renewal", Label: "Renewal", Type: "date"},
		{Name: "vip", Label: "VIP", Type: "boolean"},
		{Name: "notes", Label: "Notes", Type: "textarea"},
	} {
		if _, err := s.Create(ctx, things, in); err != nil {
			t.Fatal(err)
		}
	}
	for _, in := range []string{
		`{"tier": "gold", "regions": ["emea", "apac"], "budget": 9.5, "renewal": "2026-01-01", "vip": true}`,
		`{"tier": "silver", "regions": ["emea"], "budget": 100, "renewal": "2026-06-01"}`,
		`{"tier": "gold", "budget": "20", "vip": false}`,
		`{}`,
	} {
		if err := write(t, s, 0, in); err != nil {
			t.Fatal(err)
		}
	}
	defs, err := s.List(ctx, things.Name)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		query string
		want  []int64
	}{
		{"cf[tier]=gold", []int64{1, 3}},
		{"cf[tier]=gold,silver&sort_by=cf.budget", []int64{1, 3, 2}},
		{"cf[regions]=emea,apac", []int64{1}},
		{"cf[budget][gte]=10&cf[budget][lte]=100", []int64{2, 3}},
		{"cf[renewal][lte]=2026-03-01", []int64{1}},
		{"cf[vip]=false", []int64{3}},
		{"cf[vip][empty]=true", []int64{2, 4}},
		{"cf[budget][empty]=false&cf[tier]=gold&sort_by=cf.renewal", []int64{1, 3}},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			q, err := url.ParseQuery(tt.query)
			if err != nil {
				t.Fatal(err)
			}
			cq, err := customfield.ParseFilters(q, q.Get("sort_by"), defs)
			if err != nil {
				t.Fatal(err)
			}
			col := customfield.Column("custom_fields")
			var w listsql.Where
			col.Where(&w, cq.Filters)
			order := "ORDER BY id"
			if cq.Sort != nil {
				order = fmt.Sprintf("ORDER BY %s, id", col.Value(*cq.Sort))
			}
			rows, err := s.DB.Query(ctx, `SELECT id FROM things `+w.SQL()+` `+order, w.Args()...)
			if err != nil {
				t.Fatal(err)
			}
			got, err := pgx.CollectRows(rows, pgx.RowTo[int64])
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ids (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseFiltersRefusesBadFilters(t *testing.T) {
	t.Parallel()
	tests := []struct {
		query string
		want  []fault.Field
	}{
		{"cf[nope]=1", []fault.Field{{Field: "cf[nope]", Message: "is not a custom field of this record type"}}},
		{"cf[tier][gte]=gold", []fault.Field{{Field: "cf[tier][gte]", Message: "a range applies only to number, date and datetime fields"}}},
		{"cf[budget][gte]=lots", []fault.Field{{Field: "cf[budget][gte]", Message: "must be a decimal number such as 1250.5"}}},
		{"cf[renewal][lte]=2026-02-30", []fault.Field{{Field: "cf[renewal][lte]", Message: "must be a date in the form YYYY-MM-DD"}}},
		{"cf[vip][empty]=maybe", []fault.Field{{Field: "cf[vip][empty]", Message: "must be true or false"}}},
		{"cf[notes]=x", []fault.Field{{Field: "cf[notes]", Message: "a textarea field cannot be filtered by value (use [empty])"}}},
		{"cf[budget][between]=1", []fault.Field{{Field: "cf[budget][between]", Message: "must be cf[<name>], cf[<name>][gte], cf[<name>][lte] or cf[<name>][empty]"}}},
		{"sort_by=cf.regions", []fault.Field{{Field: "sort_by", Message: "a multi_enum field cannot be sorted by"}}},
		{"sort_by=cf.nope", []fault.Field{{Field: "sort_by", Message: "cf.nope is not a custom field of this record type"}}},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			t.Parallel()
			q, err := url.ParseQuery(tt.query)
			if err != nil {
				t.Fatal(err)
			}
			_, err = customfield.ParseFilters(q, q.Get("sort_by"), defs)
			if diff := cmp.Diff(tt.want, fields(err)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// custom_field_enums is what count cubes key records by: the record's
// values of its object's enum fields, nothing else, and none of a deleted
// field.
func TestEnumValuesProjection(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := context.Background()
	for _, in := range []propertyapi.PropertyInput{
		{Name: "tier", Label: "Tier", Type: "enum", Options: []propertyapi.Option{{Value: "gold", Label: "Gold"}, {Value: "silver", Label: "Silver"}}},
		{Name: "code", Label: "Code", Type: "text"},
	} {
		if _, err := s.Create(ctx, things, in); err != nil {
			t.Fatal(err)
		}
	}
	project := func(vals string) string {
		t.Helper()
		var got string
		if err := s.DB.QueryRow(ctx, `SELECT custom_field_enums('contacts', $1::jsonb)::text`, vals).Scan(&got); err != nil {
			t.Fatal(err)
		}
		return got
	}
	for vals, want := range map[string]string{
		`{}`:                            `{}`,
		`{"code": "C-1"}`:               `{}`,
		`{"tier": "gold", "code": "C"}`: `{"tier": "gold"}`,
	} {
		if got := project(vals); got != want {
			t.Errorf("custom_field_enums(%s) = %s, want %s", vals, got, want)
		}
	}
	if err := s.Delete(ctx, things, "tier"); err != nil {
		t.Fatal(err)
	}
	if got := project(`{"tier": "gold"}`); got != `{}` {
		t.Errorf("after the field's deletion custom_field_enums = %s, want {}", got)
	}
}

// TestLookupsFollowAGrowingTable: a field's claims are looked up by its
// primary key even when every plan so far was made while they were
// empty (analyzed so): a plan cached then would scan every claim for each
// value as a sync fills the table.
func TestLookupsFollowAGrowingTable(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := context.Background()
	erp, err := s.Create(ctx, things, propertyapi.PropertyInput{Name: "erp_id", Label: "ERP id", Type: "text", Unique: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.DB.Exec(ctx, `ANALYZE custom_field_unique`); err != nil {
		t.Fatal(err)
	}
	values := make([]string, 100)
	for i := range values {
		values[i] = fmt.Sprintf("ERP-%d", i*7)
	}
	err = s.DB.InTx(ctx, func(tx pgx.Tx) error {
		for range 8 { // a prepared statement's plan goes generic after five
			if _, err := customfield.LookupMany(ctx, tx, things.Name, erp, values); err != nil {
				return err
			}
			if _, _, err := customfield.Lookup(ctx, tx, things.Name, erp, values[0]); err != nil {
				return err
			}
		}
		if _, err := tx.Exec(ctx, `INSERT INTO custom_field_unique (object, name, value, record_id)
			SELECT $1, 'erp_id', 'ERP-' || g, g + 1 FROM generate_series(0, 19999) g`, things.Name); err != nil {
			return err
		}
		scans := func() (seq, idx int64) {
			if err := tx.QueryRow(ctx, `SELECT seq_scan, coalesce(idx_scan, 0) FROM pg_stat_xact_user_tables
				WHERE relname = 'custom_field_unique'`).Scan(&seq, &idx); err != nil {
				t.Fatal(err)
			}
			return seq, idx
		}
		seq0, idx0 := scans()
		found, err := customfield.LookupMany(ctx, tx, things.Name, erp, values)
		if err != nil {
			return err
		}
		id, ok, err := customfield.Lookup(ctx, tx, things.Name, erp, "ERP-7")
		if err != nil {
			return err
		}
		seq, idx := scans()
		if len(found) != len(values) || found["ERP-693"] != 694 || !ok || id != 8 {
			t.Errorf("LookupMany found %d of %d (ERP-693 → %d), Lookup(ERP-7) = %d, %v", len(found), len(values), found["ERP-693"], id, ok)
		}
		if seq != seq0 || idx == idx0 {
			t.Errorf("lookups after the table grew: %d sequential scans, %d index scans; want none and some", seq-seq0, idx-idx0)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
