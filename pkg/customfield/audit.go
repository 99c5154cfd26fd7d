package customfield

import (
	"context"
	"reflect"
	"strings"

	"github.com/opencrm/crm/pkg/audit"
	"github.com/opencrm/crm/pkg/db"
	"github.com/opencrm/crm/pkg/outbox"
)

// fieldChange is one attribute of a definition before and after, in an
// audit entry's details.
type fieldChange struct {
	Field string `json:"field"`
	From  any    `json:"from"`
	To    any    `json:"to"`
}

// record writes the audit entry of a definition change in the change's
// transaction: the context is the one whose stream s publishes on
// (crm:events:contacts → contacts).
func (s Store) record(ctx context.Context, q db.Querier, action string, d Definition, details map[string]any) error {
	details["object"], details["name"] = d.Object, d.Name
	return audit.Record(ctx, q, strings.TrimPrefix(s.Stream, outbox.StreamPrefix), audit.Entry{
		Action: action, Object: "custom_field", ID: d.Object + "." + d.Name, Details: details})
}

// changes lists the attributes old and d differ in.
func changes(old, d Definition) []fieldChange {
	out := []fieldChange{}
	add := func(field string, from, to any) {
		if !reflect.DeepEqual(from, to) {
			out = append(out, fieldChange{field, from, to})
		}
	}
	add("label", old.Label, d.Label)
	add("type", old.Type, d.Type)
	add("options", old.Options, d.Options)
	add("required", old.Required, d.Required)
	add("unique", old.Unique, d.Unique)
	add("description", old.Description, d.Description)
	add("position", old.Position, d.Position)
	return out
}
