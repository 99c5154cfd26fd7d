package contracts

import (
	"encoding/json"
	"fmt"
	"html"
	"regexp"
	"strconv"
	"strings"

	"github.com/shopspring/decimal"

	"github.com/opencrm/crm/pkg/contract/contractsapi"
	"github.com/opencrm/crm/pkg/fault"
)

// Tag groups, in catalogue order.
const (
	GroupLicensee = "Licensee"
	GroupDeal     = "Deal"
	GroupQuote    = "Quote"
	GroupContract = "Contract"
)

// Groups lists the groups in the order the catalogue presents them.
var Groups = []string{GroupLicensee, GroupDeal, GroupQuote, GroupContract}

// Tag is one entry of the merge-tag catalogue. The catalogue is the single
// definition of every tag: the template validator, the resolver, the JSON
// catalogue and the PDF catalogue all read it, so they cannot disagree.
type Tag struct {
	Group       string
	Name        string // "licensee.company_name"
	Label       string
	Description string
	Example     string
	// text returns the plain-text value ("" when there is none).
	text func(*Values) string
	// html, when set, returns ready-made markup whose every value is
	// escaped (the quote's line-item table); it replaces text in HTML.
	html func(*Values) string
}

// Token is how the tag is written in a template: "{{licensee.company_name}}".
func (t Tag) Token() string { return "{{" + t.Name + "}}" }

// Catalogue is the ordered set of merge tags.
type Catalogue struct {
	tags   []Tag
	byName map[string]*Tag
}

// Tags returns the tags in catalogue order.
func (c *Catalogue) Tags() []Tag { return c.tags }

// Lookup finds a tag by its normalised name.
func (c *Catalogue) Lookup(name string) (*Tag, bool) {
	t, ok := c.byName[name]
	return t, ok
}

// Grouped is the catalogue as the API shows it: groups in catalogue order.
type Grouped struct {
	c *Catalogue
}

// Grouped returns the JSON view of the catalogue.
func (c *Catalogue) Grouped() Grouped { return Grouped{c} }

// Group returns the public entries of one group.
func (g Grouped) Group(name string) []contractsapi.MergeTag {
	out := []contractsapi.MergeTag{}
	for _, t := range g.c.tags {
		if t.Group == name {
			out = append(out, contractsapi.MergeTag{Tag: t.Token(), Label: t.Label, Description: t.Description, Example: t.Example})
		}
	}
	return out
}

// MarshalJSON writes {"Licensee":[...],"Deal":[...],"Quote":[...],"Contract":[...]}
// with the groups in catalogue order (a Go map would sort them).
func (g Grouped) MarshalJSON() ([]byte, error) {
	var b strings.Builder
	b.WriteByte('{')
	for i, name := range Groups {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(name)
		v, err := json.Marshal(g.Group(name))
		if err != nil {
			return nil, err
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return []byte(b.String()), nil
}

// tagPattern finds anything written as a tag: "{{" up to "}}" with no brace
// inside. Whether the inside names a known tag is decided afterwards, so a
// misspelt tag is reported instead of silently left in the text.
var tagPattern = regexp.MustCompile(`\{\{([^{}]{0,100})\}\}`)

// normalise turns the inside of the braces into a catalogue name: spaces
// around it are allowed and case does not matter.
func normalise(inner string) string {
	return strings.ToLower(strings.TrimSpace(inner))
}

// isPagePlaceholder reports {{page}} and {{pages}}, kept for the renderer.
func isPagePlaceholder(name string) bool { return name == "page" || name == "pages" }

// Check lists every tag of text that is not in the catalogue, as field
// errors of field. allowPages admits {{page}} and {{pages}} (header and
// footer cells only).
func (c *Catalogue) Check(field, text string, allowPages bool) []fault.Field {
	var errs []fault.Field
	seen := map[string]bool{}
	for _, m := range tagPattern.FindAllStringSubmatch(text, -1) {
		name := normalise(m[1])
		if _, ok := c.byName[name]; ok || (allowPages && isPagePlaceholder(name)) {
			continue
		}
		if seen[m[0]] {
			continue
		}
		seen[m[0]] = true
		errs = append(errs, fault.Field{Field: field, Message: "unknown merge tag " + m[0]})
	}
	return errs
}

// Resolution accumulates the tags a generation could not fill.
type Resolution struct {
	unresolved []string
	seen       map[string]bool
}

func (r *Resolution) miss(token string) {
	if r.seen == nil {
		r.seen = map[string]bool{}
	}
	if !r.seen[token] {
		r.seen[token] = true
		r.unresolved = append(r.unresolved, token)
	}
}

// Unresolved returns the tags that resolved to "" (canonical form, first
// appearance order), never nil.
func (r *Resolution) Unresolved() []string {
	if r.unresolved == nil {
		return []string{}
	}
	return r.unresolved
}

// ResolveHTML replaces every tag of sanitised template HTML with its value,
// HTML-escaped, so a value can never become markup. It is a single pass: a
// value that itself looks like a tag is not resolved again. A known tag
// without a value becomes "" and is recorded; an unknown tag (a template
// saved before the catalogue changed) is left as written and recorded.
func (c *Catalogue) ResolveHTML(content string, v *Values, r *Resolution) string {
	return tagPattern.ReplaceAllStringFunc(content, func(tok string) string {
		name := normalise(tok[2 : len(tok)-2])
		t, ok := c.byName[name]
		if !ok {
			r.miss(tok)
			return tok
		}
		if t.html != nil {
			out := t.html(v)
			if out == "" {
				r.miss(t.Token())
			}
			return out
		}
		val := t.text(v)
		if val == "" {
			r.miss(t.Token())
		}
		return html.EscapeString(val)
	})
}

// ResolveText resolves a plain-text header or footer cell: values are not
// escaped (the renderer escapes the cell) and {{page}}/{{pages}} are kept.
func (c *Catalogue) ResolveText(cell string, v *Values, r *Resolution) string {
	return tagPattern.ReplaceAllStringFunc(cell, func(tok string) string {
		name := normalise(tok[2 : len(tok)-2])
		if isPagePlaceholder(name) {
			return "{{" + name + "}}"
		}
		t, ok := c.byName[name]
		if !ok {
			r.miss(tok)
			return tok
		}
		val := t.text(v)
		if val == "" {
			r.miss(t.Token())
		}
		// The renderers turn {{page}}/{{pages}} left in a cell into live
		// fields; a value (a company named "Acme {{pages}}") must stay text,
		// so its "{{" gets an invisible break.
		return strings.ReplaceAll(val, "{{", "{\u200b{")
	})
}

func str(p *string) string {
	if p == nil {
		return ""
	}
	return strings.TrimSpace(*p)
}

// money formats an amount as deals sent it, with thousands separators:
// the digits, and so the scale, are exactly deals' ("2.698" → "2.698",
// "1234567" → "1,234,567"); nothing is rounded or padded here.
func money(a Amount) string {
	if !a.Valid {
		return ""
	}
	s := a.Text
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	intPart, frac, hasFrac := strings.Cut(s, ".")
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	for i, ch := range intPart {
		if i > 0 && (len(intPart)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(ch)
	}
	if hasFrac {
		b.WriteString("." + frac)
	}
	return b.String()
}

func withCurrency(cur string, a Amount) string {
	m := money(a)
	cur = strings.TrimSpace(cur)
	if m == "" || cur == "" {
		return m
	}
	return cur + " " + m
}

func number(d decimal.NullDecimal) string {
	if !d.Valid {
		return ""
	}
	return d.Decimal.String()
}

func join(sep string, parts ...string) string {
	var kept []string
	for _, p := range parts {
		if p = strings.TrimSpace(p); p != "" {
			kept = append(kept, p)
		}
	}
	return strings.Join(kept, sep)
}

func company(v *Values) *Company {
	if v.Merge.Company != nil {
		return v.Merge.Company
	}
	return &Company{}
}

func contact(v *Values) *Contact {
	if v.Merge.Contact != nil {
		return v.Merge.Contact
	}
	return &Contact{}
}

func quote(v *Values) *Quote {
	if v.Merge.Quote != nil {
		return v.Merge.Quote
	}
	return &Quote{}
}

func yesNo(b bool) string {
	if b {
		return "Yes"
	}
	return "No"
}

// lineItemsHTML builds the quote's line-item table. The markup is ours;
// every cell value is escaped.
func lineItemsHTML(v *Values) string {
	q := v.Merge.Quote
	if q == nil || len(q.LineItems) == 0 {
		return ""
	}
	e := html.EscapeString
	var b strings.Builder
	b.WriteString(`<table class="line-items"><thead><tr><th>Description</th><th>Quantity</th><th>Unit price</th><th>Amount</th></tr></thead><tbody>`)
	for _, li := range q.LineItems {
		// The amount is deals' rounded line amount, the one its subtotal
		// adds up; quantity × unit price would differ by the rounding.
		fmt.Fprintf(&b, `<tr><td>%s</td><td>%s</td><td>%s</td><td>%s</td></tr>`,
			e(li.Description), e(number(li.Quantity)), e(money(li.UnitPrice)), e(money(li.Amount)))
	}
	b.WriteString(`</tbody></table>`)
	return b.String()
}

// DefaultCatalogue is the platform's merge-tag catalogue.
func DefaultCatalogue() *Catalogue {
	tags := []Tag{
		// Licensee: the deal's company and its signatory contact.
		{Group: GroupLicensee, Name: "licensee.company_name", Label: "Company name", Description: "Legal name of the licensee company (the deal's company).", Example: "Acme GmbH",
			text: func(v *Values) string { return strings.TrimSpace(company(v).Name) }},
		{Group: GroupLicensee, Name: "licensee.address", Label: "Address", Description: "Full postal address of the company on one line.", Example: "Hauptstraße 1, 10115 Berlin, Germany",
			text: func(v *Values) string {
				c := company(v)
				return join(", ", str(c.AddressStreet), join(" ", str(c.AddressZip), str(c.AddressCity)), str(c.AddressState), str(c.AddressCountry))
			}},
		{Group: GroupLicensee, Name: "licensee.address_street", Label: "Street", Description: "Street and number of the company address.", Example: "Hauptstraße 1",
			text: func(v *Values) string { return str(company(v).AddressStreet) }},
		{Group: GroupLicensee, Name: "licensee.address_city", Label: "City", Description: "City of the company address.", Example: "Berlin",
			text: func(v *Values) string { return str(company(v).AddressCity) }},
		{Group: GroupLicensee, Name: "licensee.address_state", Label: "State", Description: "State or region of the company address.", Example: "Berlin",
			text: func(v *Values) string { return str(company(v).AddressState) }},
		{Group: GroupLicensee, Name: "licensee.address_zip", Label: "Postal code", Description: "Postal code of the company address.", Example: "10115",
			text: func(v *Values) string { return str(company(v).AddressZip) }},
		{Group: GroupLicensee, Name: "licensee.address_country", Label: "Country", Description: "Country of the company address.", Example: "Germany",
			text: func(v *Values) string { return str(company(v).AddressCountry) }},
		{Group: GroupLicensee, Name: "licensee.phone", Label: "Company phone", Description: "Main phone number of the company.", Example: "+49 30 1234567",
			text: func(v *Values) string { return str(company(v).Phone) }},
		{Group: GroupLicensee, Name: "licensee.website", Label: "Website", Description: "Website of the company.", Example: "https://acme.example",
			text: func(v *Values) string { return str(company(v).Website) }},
		{Group: GroupLicensee, Name: "licensee.industry", Label: "Industry", Description: "Industry of the company.", Example: "Manufacturing",
			text: func(v *Values) string { return str(company(v).Industry) }},
		{Group: GroupLicensee, Name: "licensee.contact_name", Label: "Contact name", Description: "Full name of the signatory: the deal's contact, else the company's primary contact.", Example: "Jane Doe",
			text: func(v *Values) string { c := contact(v); return join(" ", c.FirstName, c.LastName) }},
		{Group: GroupLicensee, Name: "licensee.contact_first_name", Label: "Contact first name", Description: "First name of the signatory.", Example: "Jane",
			text: func(v *Values) string { return strings.TrimSpace(contact(v).FirstName) }},
		{Group: GroupLicensee, Name: "licensee.contact_last_name", Label: "Contact last name", Description: "Last name of the signatory.", Example: "Doe",
			text: func(v *Values) string { return strings.TrimSpace(contact(v).LastName) }},
		{Group: GroupLicensee, Name: "licensee.contact_email", Label: "Contact email", Description: "Email address of the signatory.", Example: "jane.doe@acme.example",
			text: func(v *Values) string { return str(contact(v).Email) }},
		{Group: GroupLicensee, Name: "licensee.contact_phone", Label: "Contact phone", Description: "Phone of the signatory (mobile when no phone is known).", Example: "+49 170 1234567",
			text: func(v *Values) string {
				c := contact(v)
				if p := str(c.Phone); p != "" {
					return p
				}
				return str(c.Mobile)
			}},
		{Group: GroupLicensee, Name: "licensee.contact_job_title", Label: "Contact job title", Description: "Job title of the signatory.", Example: "Managing Director",
			text: func(v *Values) string { return str(contact(v).JobTitle) }},

		// Deal.
		{Group: GroupDeal, Name: "deal.title", Label: "Deal title", Description: "Title of the deal the contract is for.", Example: "Acme enterprise licence",
			text: func(v *Values) string { return strings.TrimSpace(v.Merge.Deal.Title) }},
		{Group: GroupDeal, Name: "deal.value", Label: "Deal value", Description: "Value of the deal with its currency.", Example: "USD 12,500.00",
			text: func(v *Values) string { return withCurrency(v.Merge.Deal.Currency, v.Merge.Deal.Value) }},
		{Group: GroupDeal, Name: "deal.amount", Label: "Deal amount", Description: "Value of the deal without currency.", Example: "12,500.00",
			text: func(v *Values) string { return money(v.Merge.Deal.Value) }},
		{Group: GroupDeal, Name: "deal.currency", Label: "Currency", Description: "ISO 4217 currency of the deal.", Example: "USD",
			text: func(v *Values) string { return strings.TrimSpace(v.Merge.Deal.Currency) }},
		{Group: GroupDeal, Name: "deal.stage", Label: "Stage", Description: "Pipeline stage of the deal.", Example: "Negotiation",
			text: func(v *Values) string {
				if s := strings.TrimSpace(v.Merge.StageName); s != "" {
					return s
				}
				return strings.TrimSpace(v.Merge.Deal.StageName)
			}},
		{Group: GroupDeal, Name: "deal.status", Label: "Status", Description: "Status of the deal (open, won, lost).", Example: "won",
			text: func(v *Values) string { return strings.TrimSpace(v.Merge.Deal.Status) }},
		{Group: GroupDeal, Name: "deal.owner_name", Label: "Owner", Description: "Name of the user the deal is assigned to.", Example: "Sam Seller",
			text: func(v *Values) string { return strings.TrimSpace(v.Merge.OwnerName) }},
		{Group: GroupDeal, Name: "deal.expected_close_date", Label: "Expected close date", Description: "Expected close date of the deal (YYYY-MM-DD).", Example: "2026-03-31",
			text: func(v *Values) string { return str(v.Merge.Deal.ExpectedCloseDate) }},

		// Quote: the accepted quote, else the newest.
		{Group: GroupQuote, Name: "quote.number", Label: "Quote number", Description: "Number of the merged quote (the accepted one, else the newest).", Example: "Q-2026-00042",
			text: func(v *Values) string { return strings.TrimSpace(quote(v).QuoteNumber) }},
		{Group: GroupQuote, Name: "quote.status", Label: "Quote status", Description: "Status of the quote (draft, sent, accepted, declined).", Example: "accepted",
			text: func(v *Values) string { return strings.TrimSpace(quote(v).Status) }},
		{Group: GroupQuote, Name: "quote.currency", Label: "Quote currency", Description: "ISO 4217 currency of the quote.", Example: "USD",
			text: func(v *Values) string { return strings.TrimSpace(quote(v).Currency) }},
		{Group: GroupQuote, Name: "quote.valid_until", Label: "Valid until", Description: "Last day the quote is valid (YYYY-MM-DD).", Example: "2026-02-28",
			text: func(v *Values) string { return str(quote(v).ValidUntil) }},
		{Group: GroupQuote, Name: "quote.subtotal", Label: "Subtotal", Description: "Sum of the line items before tax, with currency.", Example: "USD 10,000.00",
			text: func(v *Values) string { q := quote(v); return withCurrency(q.Currency, q.Subtotal) }},
		{Group: GroupQuote, Name: "quote.tax_rate", Label: "Tax rate", Description: "Tax rate in percent.", Example: "19%",
			text: func(v *Values) string {
				if n := number(quote(v).TaxRate); n != "" {
					return n + "%"
				}
				return ""
			}},
		{Group: GroupQuote, Name: "quote.tax", Label: "Tax", Description: "Tax amount, with currency.", Example: "USD 1,900.00",
			text: func(v *Values) string { q := quote(v); return withCurrency(q.Currency, q.Tax) }},
		{Group: GroupQuote, Name: "quote.total", Label: "Total", Description: "Total including tax, with currency.", Example: "USD 11,900.00",
			text: func(v *Values) string { q := quote(v); return withCurrency(q.Currency, q.Total) }},
		{Group: GroupQuote, Name: "quote.line_items", Label: "Line items", Description: "Table of the quote's line items (description, quantity, unit price, amount). In header and footer cells it becomes a one-line list of descriptions.", Example: "Licence × 10 …",
			text: func(v *Values) string {
				var parts []string
				for _, li := range quote(v).LineItems {
					parts = append(parts, strings.TrimSpace(li.Description))
				}
				return join("; ", parts...)
			},
			html: lineItemsHTML},

		// Contract.
		{Group: GroupContract, Name: "contract.number", Label: "Contract number", Description: "Number of the contract ({prefix}-{YYYY}-{NNNNN}).", Example: "CTR-2026-00017",
			text: func(v *Values) string { return v.Contract.Number }},
		{Group: GroupContract, Name: "contract.title", Label: "Contract title", Description: "Title of the contract.", Example: "Enterprise licence agreement",
			text: func(v *Values) string { return strings.TrimSpace(v.Contract.Title) }},
		{Group: GroupContract, Name: "contract.effective_date", Label: "Effective date", Description: "Date the contract takes effect (start date, else the creation date).", Example: "2026-01-01",
			text: func(v *Values) string { return v.Contract.EffectiveDate }},
		{Group: GroupContract, Name: "contract.termination_date", Label: "Termination date", Description: "Date the contract ends (end date, else effective date plus the term).", Example: "2028-12-31",
			text: func(v *Values) string { return v.Contract.TerminationDate }},
		{Group: GroupContract, Name: "contract.start_date", Label: "Start date", Description: "Start date as entered on the contract.", Example: "2026-01-01",
			text: func(v *Values) string { return v.Contract.StartDate }},
		{Group: GroupContract, Name: "contract.end_date", Label: "End date", Description: "End date as entered on the contract.", Example: "2028-12-31",
			text: func(v *Values) string { return v.Contract.EndDate }},
		{Group: GroupContract, Name: "contract.term_months", Label: "Term (months)", Description: "Length of the term in months; an auto-renewing contract renews by this much.", Example: "36",
			text: func(v *Values) string {
				if v.Contract.TermMonths <= 0 {
					return ""
				}
				return strconv.Itoa(v.Contract.TermMonths)
			}},
		{Group: GroupContract, Name: "contract.auto_renew", Label: "Auto-renew", Description: "Whether the contract renews automatically (Yes or No).", Example: "Yes",
			text: func(v *Values) string { return yesNo(v.Contract.AutoRenew) }},
		{Group: GroupContract, Name: "contract.partner_ref", Label: "Partner reference", Description: "The partner's own reference for the contract.", Example: "PO-88231",
			text: func(v *Values) string { return strings.TrimSpace(v.Contract.PartnerRef) }},
		{Group: GroupContract, Name: "contract.date", Label: "Generation date", Description: "Date the contract text was generated (YYYY-MM-DD).", Example: "2026-01-15",
			text: func(v *Values) string { return v.Contract.Today }},
	}
	c := &Catalogue{tags: tags, byName: make(map[string]*Tag, len(tags))}
	for i := range c.tags {
		c.byName[c.tags[i].Name] = &c.tags[i]
	}
	return c
}
