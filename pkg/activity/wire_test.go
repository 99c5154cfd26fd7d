package activity

import (
	"testing"

	"github.com/opencrm/crm/pkg/contract/contactsapi"
	"github.com/opencrm/crm/pkg/contract/envelope/wiretest"
)

// TestWireTypes keeps the records this package encodes and the bodies it
// decodes equal to the public wire types the OpenAPI document is
// generated from (pkg/contract): same JSON fields, same nullability.
func TestWireTypes(t *testing.T) {
	t.Parallel()
	wiretest.Check(t, []wiretest.Case{
		{Name: "Note", Service: Note{}, Wire: contactsapi.Note{}},
		{Name: "Task", Service: Task{}, Wire: contactsapi.Task{}},
		{Name: "TaskInput", Service: taskInput{}, Wire: contactsapi.TaskInput{}, NamesOnly: true},
	})
}
