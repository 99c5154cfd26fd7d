// Package customfield is each installation's own data model: the custom
// fields ("properties") an admin defines per object, the checking of the
// values records hold, list filters and sorts on them, and unique values
// that make a field an external id. Each owning context (contacts, leads,
// deals) keeps the definitions and values in its own schema; only the code
// is shared. It knows no HTTP: package propertyhttp is its edge.
package customfield

import (
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/opencrm/crm/pkg/contract/propertyapi"
	"github.com/opencrm/crm/pkg/validate"
)

// Definition is one custom field of an object (the wire type itself).
type Definition = propertyapi.Property

// Type is a custom field's type.
type Type = string

// The types of DESIGN's custom fields.
const (
	Text      Type = "text"
	Textarea  Type = "textarea"
	Number    Type = "number"
	Date      Type = "date"
	DateTime  Type = "datetime"
	Boolean   Type = "boolean"
	Enum      Type = "enum"
	MultiEnum Type = "multi_enum"
	URL       Type = "url"
	Email     Type = "email"
	Phone     Type = "phone"
	User      Type = "user"
)

// Types lists every type, in the document's order.
var Types = []Type{Text, Textarea, Number, Date, DateTime, Boolean, Enum, MultiEnum, URL, Email, Phone, User}

// Limits.
const (
	MaxDefinitions = 250
	MaxOptions     = 1000
	MaxLabel       = 100
	MaxDescription = 1000
	MaxOptionValue = 100
	MaxText        = 255
	MaxTextarea    = 100_000
	MaxURL         = 2048
	MaxPhone       = 50
	// MaxDigits and MaxPlaces bound a number: an exact decimal of up to
	// 18 digits, 6 of them after the point.
	MaxDigits = 18
	MaxPlaces = 6
)

// Object is one object that carries custom fields, as its context wires it.
type Object struct {
	// Name is the object's public name (propertyapi.Contacts...).
	Name string
	// Table is the record table whose custom_fields column holds the
	// values (trusted code, never input).
	Table string
	// Builtins are the record's own JSON field names; a custom field may
	// not take one.
	Builtins []string
}

var nameRE = regexp.MustCompile(`^[a-z][a-z0-9_]{0,62}$`)

// reserved names are neither built-in fields nor usable: they name the API's
// own members and parameters around records.
var reserved = []string{"id", "custom_fields", "created_at", "updated_at", "deleted_at", "created_by",
	"id_property", "object", "record", "status_code", "cf"}

// ValidName reports whether name is a well-formed custom field name (it
// is then safe to spell inside SQL as a literal).
func ValidName(name string) bool { return nameRE.MatchString(name) }

// uniqueTypes are the types a unique flag (an external id) may be set on.
var uniqueTypes = []Type{Text, Email, Phone, Number}

// checkNew validates a new definition against the object and the
// definitions it already has.
func checkNew(obj Object, in propertyapi.PropertyInput, existing []Definition) error {
	var v validate.Errors
	switch {
	case in.Name == "":
		v.Add("name", "is required")
	case !ValidName(in.Name):
		v.Add("name", "must start with a lower-case letter and hold only lower-case letters, digits and _ (at most 63)")
	case slices.Contains(obj.Builtins, in.Name):
		v.Add("name", "is a built-in field of %s", obj.Name)
	case slices.Contains(reserved, in.Name):
		v.Add("name", "is reserved")
	case slices.ContainsFunc(existing, func(d Definition) bool { return d.Name == in.Name }):
		v.Add("name", "is already used by another custom field of %s", obj.Name)
	}
	if len(existing) >= MaxDefinitions {
		v.Add("name", "%s already has %d custom fields, the most allowed", obj.Name, MaxDefinitions)
	}
	checkAttrs(&v, in.Label, in.Type, in.Options, in.Unique, in.Description, in.Position)
	return v.Err()
}

// checkAttrs validates what a create and an update share.
func checkAttrs(v *validate.Errors, label string, typ Type, options []propertyapi.Option, unique bool, description string, position int) {
	if v.Required("label", label) {
		v.MaxLen("label", label, MaxLabel)
	}
	if typ == "" {
		v.Add("type", "is required")
	} else if !slices.Contains(Types, typ) {
		v.Add("type", "must be one of %s", strings.Join(Types, ", "))
	}
	v.MaxLen("description", description, MaxDescription)
	if position < 0 {
		v.Add("position", "must be 0 or more")
	}
	if unique && typ != "" && !slices.Contains(uniqueTypes, typ) {
		v.Add("unique", "applies only to text, email, phone and number fields")
	}
	isEnum := typ == Enum || typ == MultiEnum
	switch {
	case isEnum && len(options) == 0:
		v.Add("options", "an enum field needs at least one option")
	case !isEnum && len(options) > 0:
		v.Add("options", "only enum and multi_enum fields have options")
	case len(options) > MaxOptions:
		v.Add("options", "must hold at most %d options", MaxOptions)
	}
	seen := map[string]bool{}
	for i, o := range options {
		field := "options[" + strconv.Itoa(i) + "]"
		switch {
		case strings.TrimSpace(o.Value) == "":
			v.Add(field+".value", "is required")
		case len([]rune(o.Value)) > MaxOptionValue:
			v.Add(field+".value", "must be at most %d characters", MaxOptionValue)
		case strings.Contains(o.Value, ","):
			v.Add(field+".value", "must not contain a comma (list filters separate values with one)")
		case validate.Text(o.Value) != "":
			v.Add(field+".value", "%s", validate.Text(o.Value))
		case seen[o.Value]:
			v.Add(field+".value", "repeats an earlier option")
		}
		seen[o.Value] = true
		v.MaxLen(field+".label", o.Label, MaxLabel)
	}
}
