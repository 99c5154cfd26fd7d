package bulk_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/opencrm/crm/pkg/bulk"
	"github.com/opencrm/crm/pkg/contract/batchapi"
	"github.com/opencrm/crm/pkg/customfield"
	"github.com/opencrm/crm/pkg/fault"
	"github.com/opencrm/crm/pkg/problem"
)

// fields is err's invalid-input fields, nil for no error.
func fields(t *testing.T, err error) []fault.Field {
	t.Helper()
	if err == nil {
		return nil
	}
	var f *fault.Error
	if !errors.As(err, &f) {
		t.Fatalf("not a fault: %v", err)
	}
	return f.Fields
}

func TestErrorsNameTheInput(t *testing.T) {
	t.Parallel()
	var e bulk.Errors
	e.Size("inputs", 101)
	if err := e.Add(3, fault.Invalid("email", "must be a valid email address")); err != nil {
		t.Fatal(err)
	}
	if err := e.Add(4, fault.Conflict("duplicate_email", "a contact with this email already exists")); err != nil {
		t.Fatal(err)
	}
	e.Unique("email", []string{"a@x.co", "", "b@x.co", "a@x.co"})
	boom := errors.New("connection reset")
	if err := e.Add(5, boom); err != boom {
		t.Errorf("a database error must stop the batch, got %v", err)
	}
	var f *fault.Error
	if !errors.As(e.Err(), &f) {
		t.Fatal("no fault")
	}
	want := []fault.Field{
		{Field: "inputs", Message: "must hold at most 100 items"},
		{Field: "inputs[3].email", Message: "must be a valid email address"},
		{Field: "inputs[4]", Message: "a contact with this email already exists"},
		{Field: "inputs[3].email", Message: "repeats inputs[0]"},
	}
	if diff := cmp.Diff(want, f.Fields); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	var empty bulk.Errors
	empty.Size("ids", 0)
	if diff := cmp.Diff([]fault.Field{{Field: "ids", Message: "must hold at least one item"}}, empty.Err().(*fault.Error).Fields); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestUniqueValuesNameTheRepeatingInput(t *testing.T) {
	t.Parallel()
	defs := []customfield.Definition{
		{Name: "erp_id", Type: customfield.Text, Unique: true},
		{Name: "note", Type: customfield.Text},
		{Name: "budget", Type: customfield.Number, Unique: true},
	}
	tests := []struct {
		name   string
		values []customfield.Values
		want   []fault.Field
	}{
		{"distinct", []customfield.Values{{"erp_id": "A"}, {"erp_id": "B"}}, nil},
		{"repeated", []customfield.Values{{"erp_id": "A"}, {"erp_id": "B"}, {"erp_id": "A"}},
			[]fault.Field{{Field: "inputs[2].custom_fields.erp_id", Message: "repeats inputs[0]"}}},
		{"a field that is not unique", []customfield.Values{{"note": "x"}, {"note": "x"}}, nil},
		{"none held, or refused", []customfield.Values{{}, nil, {"erp_id": "A"}, nil}, nil},
		{"per field, in the definitions' order", []customfield.Values{{"budget": "1.5", "erp_id": "A"}, {"budget": "1.5", "erp_id": "A"}},
			[]fault.Field{
				{Field: "inputs[1].custom_fields.erp_id", Message: "repeats inputs[0]"},
				{Field: "inputs[1].custom_fields.budget", Message: "repeats inputs[0]"},
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var e bulk.Errors
			e.UniqueValues(defs, tt.values)
			if diff := cmp.Diff(tt.want, fields(t, e.Err())); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestReadByChecksTheForm(t *testing.T) {
	t.Parallel()
	many := make([]int64, batchapi.MaxInputs+1)
	unknown := fault.Invalid("id_property", "must name a unique custom field of things")
	property := func(name string) error {
		if name != "erp_id" {
			return unknown
		}
		return nil
	}
	tests := []struct {
		name       string
		in         batchapi.Read
		byProperty bool
		want       []fault.Field
	}{
		{"ids", batchapi.Read{IDs: []int64{1, 2}}, false, nil},
		{"values", batchapi.Read{IDProperty: "erp_id", Values: []string{"A"}}, true, nil},
		{"nothing", batchapi.Read{}, false, []fault.Field{{Field: "ids", Message: "must hold at least one item"}}},
		{"too many ids", batchapi.Read{IDs: many}, false, []fault.Field{{Field: "ids", Message: "must hold at most 100 items"}}},
		{"id_property without values", batchapi.Read{IDProperty: "erp_id"}, false, []fault.Field{{Field: "values", Message: "must hold at least one item"}}},
		{"values without id_property", batchapi.Read{Values: []string{"A"}}, false, []fault.Field{{Field: "id_property", Message: "is required with values"}}},
		{"ids with id_property", batchapi.Read{IDs: []int64{1}, IDProperty: "erp_id", Values: []string{"A"}}, false, []fault.Field{{Field: "ids", Message: "cannot be given with id_property"}}},
		{"an unknown id_property wins over the size", batchapi.Read{IDProperty: "nope"}, false, unknown.Fields},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			byProperty, err := bulk.ReadBy(tt.in, property)
			if err == nil && byProperty != tt.byProperty {
				t.Errorf("byProperty = %v, want %v", byProperty, tt.byProperty)
			}
			if diff := cmp.Diff(tt.want, fields(t, err)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestFoundAnswersInOrder(t *testing.T) {
	t.Parallel()
	got := map[int64]string{1: "one", 3: "three"}
	public := func(s string) string { return s + "!" }
	tests := []struct {
		name string
		ids  []int64
		want []bulk.Result[string]
	}{
		{"none", nil, []bulk.Result[string]{}},
		{"found and not", []int64{3, 2, 1}, []bulk.Result[string]{
			bulk.Of(batchapi.Unchanged, "three!"), {Status: batchapi.NotFound}, bulk.Of(batchapi.Unchanged, "one!"),
		}},
		{"an id twice", []int64{1, 1}, []bulk.Result[string]{bulk.Of(batchapi.Unchanged, "one!"), bulk.Of(batchapi.Unchanged, "one!")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if diff := cmp.Diff(tt.want, bulk.Found(tt.ids, got, public)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestReadByIDsOrValues(t *testing.T) {
	t.Parallel()
	records := map[int64]string{1: "one", 3: "three"}
	held := map[string]int64{"A": 1, "C": 3, "X": 9}
	lookup := func(_ context.Context, v string) (int64, bool, error) {
		if v == "boom" {
			return 0, false, errors.New("connection reset")
		}
		id, ok := held[v]
		return id, ok, nil
	}
	read := func(_ context.Context, ids []int64) (map[int64]string, error) {
		out := map[int64]string{}
		for _, id := range ids {
			if r, ok := records[id]; ok {
				out[id] = r
			}
		}
		return out, nil
	}
	same := func(s string) string { return s }
	tests := []struct {
		name       string
		in         batchapi.Read
		byProperty bool
		want       []bulk.Result[string]
		fails      bool
	}{
		{"ids", batchapi.Read{IDs: []int64{3, 2}}, false, []bulk.Result[string]{bulk.Of(batchapi.Unchanged, "three"), {Status: batchapi.NotFound}}, false},
		{"values", batchapi.Read{IDProperty: "erp_id", Values: []string{"C", "B", "A"}}, true,
			[]bulk.Result[string]{bulk.Of(batchapi.Unchanged, "three"), {Status: batchapi.NotFound}, bulk.Of(batchapi.Unchanged, "one")}, false},
		{"a value whose record went", batchapi.Read{IDProperty: "erp_id", Values: []string{"X"}}, true, []bulk.Result[string]{{Status: batchapi.NotFound}}, false},
		{"a lookup failing", batchapi.Read{IDProperty: "erp_id", Values: []string{"A", "boom"}}, true, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := bulk.Read(context.Background(), tt.in, tt.byProperty, lookup, read, same)
			if (err != nil) != tt.fails {
				t.Fatalf("err = %v, want failure %v", err, tt.fails)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestIDsArePositiveAndGivenOnce(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		ids  []int64
		want []fault.Field
	}{
		{"fine", []int64{1, 2, 3}, nil},
		{"not positive", []int64{1, 0, -4}, []fault.Field{
			{Field: "inputs[1].id", Message: "must be a positive integer"},
			{Field: "inputs[2].id", Message: "must be a positive integer"},
		}},
		{"twice", []int64{5, 6, 5}, []fault.Field{{Field: "inputs[2].id", Message: "repeats inputs[0]"}}},
		{"zero twice", []int64{0, 0}, []fault.Field{
			{Field: "inputs[0].id", Message: "must be a positive integer"},
			{Field: "inputs[1].id", Message: "must be a positive integer"},
			{Field: "inputs[1].id", Message: "repeats inputs[0]"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var e bulk.Errors
			e.IDs(tt.ids)
			if diff := cmp.Diff(tt.want, fields(t, e.Err())); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestForbiddenTellsEitherForm(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"none", nil, false},
		{"a store's fault", fault.Forbidden("not yours"), true},
		{"directory's problem", problem.Forbidden("not yours"), true},
		{"wrapped", fmt.Errorf("update: %w", problem.Forbidden("not yours")), true},
		{"another fault", fault.NotFound("deal"), false},
		{"another problem", problem.NotFound("deal"), false},
		{"the database", errors.New("connection reset"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := bulk.Forbidden(tt.err); got != tt.want {
				t.Errorf("Forbidden(%v) = %v, want %v", tt.err, got, tt.want)
			}
		})
	}
}

// TestRequestFingerprint pins the JSON of a batch's fingerprint: a change
// would turn every stored Idempotency-Key's retry into a reused key.
func TestRequestFingerprint(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		req  bulk.Request
		want string
	}{
		{"create", bulk.Request{Op: "create", Inputs: []string{"a"}}, `{"op":"create","inputs":["a"]}`},
		{"delete", bulk.Request{Op: "delete", Inputs: []int64{1, 2}}, `{"op":"delete","inputs":[1,2]}`},
		{"upsert by a named property", bulk.Request{Op: "upsert:erp_id", Inputs: []string{}}, `{"op":"upsert:erp_id","inputs":[]}`},
		{"upsert with id_property", bulk.Request{Op: "upsert", IDProperty: "email", Inputs: nil}, `{"op":"upsert","id_property":"email","inputs":null}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := json.Marshal(tt.req)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("got %s, want %s", got, tt.want)
			}
		})
	}
}
