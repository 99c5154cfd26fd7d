package leadsapi

import "github.com/opencrm/crm/pkg/validate"

// CheckName is the rule of a lead's first_name and last_name (trimmed
// already): required, at most validate.MaxName characters. Leads applies
// it to every write and intake to a public submission before storing it,
// so a submission intake accepts is one leads accepts: intake answers for
// leads while leads is down, and must not accept what leads would refuse.
func CheckName(v *validate.Errors, field, name string) {
	if v.Required(field, name) {
		v.MaxLen(field, name, validate.MaxName)
	}
}

// CheckEmail is the rule of a lead's email (trimmed, when given): at most
// validate.MaxString characters and an address; false when it fails.
func CheckEmail(v *validate.Errors, field, email string) bool {
	return v.MaxLen(field, email, validate.MaxString) && v.Email(field, email)
}
