package envelope

// ImportNote describes both CSV imports (POST /contacts/import and
// /leads/import) in the document, beside their summary.
const ImportNote = "Files exported by HubSpot, Salesforce, Pipedrive, Zoho, Outlook and Google Contacts import " +
	"unchanged: their column labels and status values are recognised, and `mapping` names any other column. " +
	"`dry_run=true` checks everything and writes nothing. The answer says how the file was read " +
	"(`encoding`, `delimiter`) and which columns no field read (`ignored_columns`); invalid rows are skipped " +
	"with a reason in `errors`. A file rejected as a whole (not text, no data rows, missing name columns, " +
	"broken quoting, a bad `mapping` or `dry_run`) is a 422 naming the form field, over the limits a 413; " +
	"either way nothing is written. Recognised labels, encodings and status synonyms: docs/import.md of the repository."

// TemplateNote describes both CSV import templates in the document.
const TemplateNote = "Any file laid out like it, or like another CRM's export (docs/import.md), imports without a mapping. " +
	"The Link header points at the API documentation."

// ImportFormNote describes the multipart body of a CSV import.
const ImportFormNote = "A multipart form whose optional mapping and dry_run fields come before file: " +
	"the file is streamed, so an option after it is refused (422) rather than ignored. See docs/import.md."
