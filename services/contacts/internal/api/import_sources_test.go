package api_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"

	"github.com/opencrm/crm/pkg/contract/propertyapi"
)

// exports holds real-looking export files of other systems (header line as
// each product writes it, CRLF, its quoting and encoding, empty columns),
// shared with the leads service and pkg/csvx.
var exports = filepath.Join("..", "..", "..", "..", "pkg", "csvx", "testdata", "exports")

type stored struct {
	First, Last, Email, Phone, Mobile, JobTitle, Company, Street, City, State, Zip, Country, Notes, Tags, Status, Source string
}

func (e *env) storedContact(t *testing.T, email string) stored {
	t.Helper()
	var s stored
	err := e.db.QueryRow(context.Background(), `SELECT first_name, last_name, coalesce(email,''), coalesce(phone,''),
		coalesce(mobile,''), coalesce(job_title,''), coalesce(company_name,''), coalesce(address_street,''),
		coalesce(address_city,''), coalesce(address_state,''), coalesce(address_zip,''), coalesce(address_country,''),
		coalesce(notes,''), coalesce(tags,''), status, coalesce(source,'') FROM contacts WHERE email = $1`, email).Scan(
		&s.First, &s.Last, &s.Email, &s.Phone, &s.Mobile, &s.JobTitle, &s.Company, &s.Street, &s.City, &s.State,
		&s.Zip, &s.Country, &s.Notes, &s.Tags, &s.Status, &s.Source)
	if err == pgx.ErrNoRows {
		t.Fatalf("no contact %s", email)
	}
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// hubspotAda is what HubSpot's export stores of its first contact.
var hubspotAda = stored{"Ada", "Lovelace", "ada@hubspot.example", "+44 20 7946 0001", "+44 7700 900001", "Analyst",
	"Analytical Engines", "12 St James's Square", "London", "Greater London", "SW1Y 4JH", "United Kingdom", "", "", "active", ""}

// TestImportOtherSystems: each product's export imports unchanged, every
// field it has lands in ours, and the columns we do not keep are listed.
func TestImportOtherSystems(t *testing.T) {
	t.Parallel()
	importOtherSystems(t)
}

// TestImportOtherSystemsWithCustomFields: custom fields whose columns a
// file lacks change nothing of its import, and its contacts hold no
// custom value.
func TestImportOtherSystemsWithCustomFields(t *testing.T) {
	t.Parallel()
	e := importOtherSystems(t, csvFields...)
	if n := e.count(t, `SELECT count(*) FROM contacts WHERE custom_fields <> '{}'`); n != 0 {
		t.Errorf("%d contacts hold custom values", n)
	}
}

// importOtherSystems imports each product's export with fields defined.
func importOtherSystems(t *testing.T, fields ...propertyapi.PropertyInput) *env {
	e := newEnv(t)
	e.define(t, fields...)
	for _, tc := range []struct {
		file      string
		imported  float64
		encoding  string
		delimiter string
		ignored   []any
		email     string
		want      stored
	}{
		{"hubspot-contacts.csv", 2, "UTF-8 with BOM", ",",
			[]any{"Record ID", "Lifecycle Stage", "Lead Status", "Contact owner", "Create Date", "Last Activity Date"},
			"ada@hubspot.example", hubspotAda},
		{"salesforce-contacts-report.csv", 2, "UTF-8", ",",
			[]any{"Contact Owner", "Created Date"},
			"grace@sf.example", stored{"Grace", "Hopper", "grace@sf.example", "(703) 555-0100", "(703) 555-0101", "Rear Admiral",
				"US Navy", "1 Navy Way\nSuite 2", "Arlington", "VA", "22202", "United States", `Wrote "COBOL", too`, "", "active", "Web"}},
		{"salesforce-contacts-object.csv", 1, "UTF-8", ",",
			[]any{"Id", "AccountId", "Salutation", "Name", "OwnerId", "CreatedDate"},
			"barbara@sfobj.example", stored{"Barbara", "Liskov", "barbara@sfobj.example", "+1 617 555 0102", "", "Professor",
				"", "32 Vassar St", "Cambridge", "MA", "02139", "USA", "", "", "active", "Other"}},
		{"pipedrive-persons.csv", 2, "UTF-8", ",",
			[]any{"Person - ID", "Person - Email - Home", "Person - Owner", "Person - Add time"},
			"margaret@pd.example", stored{"Margaret", "Heafield Hamilton", "margaret@pd.example", "+1 555 0103", "+1 555 0104", "Director",
				"Apollo Software", "1 Launch Rd", "Houston", "", "", "United States", "", "Hot", "active", ""}},
		{"zoho-contacts.csv", 1, "UTF-8", ",",
			[]any{"Record Id", "Contact Owner", "Department", "Home Phone", "Salutation", "Secondary Email", "Created Time"},
			"ken@zoho.example", stored{"Ken", "Thompson", "ken@zoho.example", "+1 908 555 0105", "+1 908 555 0106", "Engineer",
				"Bell Labs", "600 Mountain Ave", "Murray Hill", "NJ", "07974", "United States", "Unix", "unix,c", "active", "Trade Show"}},
		{"outlook-contacts.csv", 1, "Windows-1252", ",", outlookIgnored(),
			"juergen@outlook.example", stored{"Jürgen", "Müller", "juergen@outlook.example", "+49 211 555 0107", "+49 170 555 0108", "Geschäftsführer",
				"Müller & Söhne GmbH", "Königsallee 1", "Düsseldorf", "NRW", "40212", "Germany", "Preis: 100 €", "Kunden", "active", ""}},
		{"google-contacts.csv", 1, "UTF-8", ",",
			[]any{"Middle Name", "Phonetic First Name", "Phonetic Middle Name", "Phonetic Last Name", "Name Prefix", "Name Suffix",
				"Nickname", "File As", "Organization Department", "Birthday", "Photo", "E-mail 1 - Label", "Phone 1 - Label",
				"Address 1 - Label", "Address 1 - Formatted", "Address 1 - PO Box", "Address 1 - Extended Address"},
			"katherine@google.example", stored{"Katherine", "Johnson", "katherine@google.example", "+1 757 555 0109", "", "Mathematician",
				"NASA", "1 NASA Dr", "Hampton", "VA", "23666", "United States", "Hidden figure", "* myContacts ::: Work", "active", ""}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			raw, err := os.ReadFile(filepath.Join(exports, tc.file))
			if err != nil {
				t.Fatal(err)
			}
			r := e.upload(t, e.admin, "file", tc.file, raw)
			wantStatus(t, r, 200)
			got := map[string]any{"imported": r.Body["imported"], "skipped": r.Body["skipped"], "errors": r.Body["errors"],
				"encoding": r.Body["encoding"], "delimiter": r.Body["delimiter"], "ignored_columns": r.Body["ignored_columns"]}
			want := map[string]any{"imported": tc.imported, "skipped": 0.0, "errors": []any{},
				"encoding": tc.encoding, "delimiter": tc.delimiter, "ignored_columns": tc.ignored}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("answer (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.want, e.storedContact(t, tc.email)); diff != "" {
				t.Errorf("stored (-want +got):\n%s", diff)
			}
		})
	}
	return e
}

// outlookIgnored is every column of Outlook's export that no contact
// field reads.
func outlookIgnored() []any {
	read := map[string]bool{"First Name": true, "Last Name": true, "Company": true, "Job Title": true, "Business Street": true,
		"Business City": true, "Business State": true, "Business Postal Code": true, "Business Country/Region": true,
		"Business Phone": true, "Mobile Phone": true, "Categories": true, "E-mail Address": true, "Notes": true}
	var out []any
	for _, h := range outlookHeader {
		if !read[h] {
			out = append(out, h)
		}
	}
	return out
}

var outlookHeader = []string{"Title", "First Name", "Middle Name", "Last Name", "Suffix", "Company", "Department", "Job Title",
	"Business Street", "Business Street 2", "Business Street 3", "Business City", "Business State", "Business Postal Code",
	"Business Country/Region", "Home Street", "Home Street 2", "Home Street 3", "Home City", "Home State", "Home Postal Code",
	"Home Country/Region", "Other Street", "Other Street 2", "Other Street 3", "Other City", "Other State", "Other Postal Code",
	"Other Country/Region", "Assistant's Phone", "Business Fax", "Business Phone", "Business Phone 2", "Callback", "Car Phone",
	"Company Main Phone", "Home Fax", "Home Phone", "Home Phone 2", "ISDN", "Mobile Phone", "Other Fax", "Other Phone", "Pager",
	"Primary Phone", "Radio Phone", "TTY/TDD Phone", "Telex", "Account", "Anniversary", "Assistant's Name", "Billing Information",
	"Birthday", "Business Address PO Box", "Categories", "Children", "Directory Server", "E-mail Address", "E-mail Type",
	"E-mail Display Name", "E-mail 2 Address", "E-mail 2 Type", "E-mail 2 Display Name", "E-mail 3 Address", "E-mail 3 Type",
	"E-mail 3 Display Name", "Gender", "Government ID Number", "Hobby", "Home Address PO Box", "Initials", "Internet Free Busy",
	"Keywords", "Language", "Location", "Manager's Name", "Mileage", "Notes", "Office Location", "Organizational ID Number",
	"Other Address PO Box", "Priority", "Private", "Referred By", "Sensitivity", "Spouse", "User 1", "User 2", "User 3", "User 4",
	"Web Page"}
