package csvx

// Field keys of the label table. A context's Column names the key it
// takes its labels from (Column.Labels), so leads' "company" and contacts'
// "company_name" share the labels of KeyCompany.
const (
	KeyFirstName     = "first_name"
	KeyLastName      = "last_name"
	KeyFullName      = "full_name"
	KeyEmail         = "email"
	KeyPhone         = "phone"
	KeyMobile        = "mobile"
	KeyJobTitle      = "job_title"
	KeyCompany       = "company"
	KeyStreet        = "address_street"
	KeyCity          = "address_city"
	KeyState         = "address_state"
	KeyZip           = "address_zip"
	KeyCountry       = "address_country"
	KeyNotes         = "notes"
	KeyTags          = "tags"
	KeySource        = "source"
	KeyLeadStatus    = "lead_status"
	KeyContactStatus = "contact_status"
)

// labels is the one table of header labels other systems export, per
// field, best first: when a file holds two labels of one field (Outlook's
// "Business City" and "Home City"), the earlier one in the list is read
// and the other is reported as ignored. Labels are compared after
// Normalize, so "Mailing City", "MailingCity" (a Salesforce API name) and
// "mailing_city" are one label. docs/import.md lists which product
// exports which label; a label belongs to one field only (tested).
//
// Sources: HubSpot contact exports; Salesforce contact and lead objects
// (Data Export / Data Loader API names) and report exports (field
// labels); Pipedrive person and lead exports ("Person - …", "Lead - …",
// "Organization - …"); Zoho CRM contact and lead exports; Outlook's
// "Comma Separated Values" export; Google Contacts' "Google CSV" export
// (current and legacy layouts).
var labels = map[string][]string{
	KeyFirstName: {
		"First Name", "First", "Firstname", "Given Name", "Forename",
		"Person - First name", // Pipedrive
	},
	KeyLastName: {
		"Last Name", "Last", "Lastname", "Surname", "Family Name",
		"Person - Last name", // Pipedrive
	},
	KeyFullName: {
		"Full Name", "Name", "Contact Name", "Lead Name", "Display Name",
		"Person - Name",         // Pipedrive
		"Contact - Name",        // Pipedrive lead export
		"Person Name",           //
		"File As",               // Outlook, Google
		"Lead - Contact person", // Pipedrive lead export
	},
	KeyEmail: {
		"Email", "E-mail", "Email Address", "E-mail Address", "Mail",
		"Person - Email - Work", "Person - Email", "Person - Email - Home", "Person - Email - Other", // Pipedrive
		"E-mail 1 - Value", // Google
		"Primary Email",    //
		"Secondary Email",  // Zoho
		"E-mail 2 Address", // Outlook
	},
	KeyPhone: {
		"Phone", "Phone Number", "Telephone", "Tel", "Work Phone", "Business Phone",
		"Person - Phone - Work", "Person - Phone", // Pipedrive
		"Phone 1 - Value", // Google
		"Company Main Phone", "Business Phone 2", "Primary Phone", "Home Phone", "Other Phone",
		"Person - Phone - Home", "Person - Phone - Other", // Pipedrive
	},
	KeyMobile: {
		"Mobile", "Mobile Phone", "Mobile Phone Number", "MobilePhone", "Mobile Number", "Cell", "Cell Phone",
		"Person - Phone - Mobile", // Pipedrive
	},
	KeyJobTitle: {
		"Job Title", "Title", "Position", "Job", "Designation", "Role",
		"Person - Job title",                           // Pipedrive
		"Organization Title", "Organization 1 - Title", // Google
	},
	KeyCompany: {
		"Company", "Company Name", "Account Name", "Account", "Company / Account", "Organization", "Organisation",
		"Organization Name", "Organization 1 - Name", // Google
		"Person - Organization", "Organization - Name", // Pipedrive
		"Associated Company", // HubSpot
	},
	KeyStreet: {
		"Street", "Street Address", "Address", "Mailing Street", "Business Street",
		"Address 1 - Street",                          // Google
		"Person - Postal address", "Person - Address", // Pipedrive
		"Home Street", "Other Street",
	},
	KeyCity: {
		"City", "Town", "Mailing City", "Business City",
		"Address 1 - City",                    // Google
		"Person - Postal address - City/town", // Pipedrive
		"Person - Postal address - City",      //
		"Home City", "Other City",
	},
	KeyState: {
		"State", "Region", "Province", "County", "State/Region", "State/Province",
		"Mailing State", "Mailing State/Province", "Business State",
		"Address 1 - Region",                     // Google
		"Person - Postal address - State/county", // Pipedrive
		"Home State", "Other State",
	},
	KeyZip: {
		"Zip", "Zip Code", "Postal Code", "Postcode", "Zip/Postal Code",
		"Mailing Zip", "Mailing Zip/Postal Code", "Mailing Postal Code", "Business Postal Code",
		"Address 1 - Postal Code",                   // Google
		"Person - Postal address - ZIP/Postal code", // Pipedrive
		"Home Postal Code", "Other Zip", "Other Postal Code",
	},
	KeyCountry: {
		"Country", "Country/Region", "Mailing Country", "Business Country/Region",
		"Address 1 - Country",               // Google
		"Person - Postal address - Country", // Pipedrive
		"Home Country/Region", "Other Country",
	},
	KeyNotes: {
		"Notes", "Note", "Description", "Comments", "Comment",
		"Person - Note", "Lead - Note", // Pipedrive
	},
	KeyTags: {
		"Tags", "Tag", "Labels", "Label", "Categories",
		"Person - Label", "Person - Labels", "Lead - Labels", "Lead - Label", // Pipedrive
	},
	KeySource: {
		"Source", "Lead Source", "Origin", "Original Source", "Original Traffic Source",
		"Lead - Source", "Person - Source", // Pipedrive
	},
	KeyLeadStatus: {
		"Status", "Lead Status", "Stage",
	},
	KeyContactStatus: {
		"Status", "Contact Status",
	},
}

// Labels returns the known header labels of a field key, best first; nil
// for an unknown key.
func Labels(key string) []string {
	return append([]string(nil), labels[key]...)
}

// LabelKeys lists the keys of the table (for documentation and tests).
func LabelKeys() []string {
	out := make([]string, 0, len(labels))
	for k := range labels {
		out = append(out, k)
	}
	return out
}
