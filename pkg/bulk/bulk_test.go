package bulk_test

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/opencrm/crm/pkg/bulk"
	"github.com/opencrm/crm/pkg/fault"
)

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
