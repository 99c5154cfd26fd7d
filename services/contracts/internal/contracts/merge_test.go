package contracts

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/shopspring/decimal"
	"golang.org/x/net/html"

	"github.com/opencrm/crm/pkg/renderq"
)

// fuzzTemplate uses every tag, in text and in a quoted attribute.
func fuzzTemplate(c *Catalogue) string {
	var b strings.Builder
	for _, t := range c.Tags() {
		b.WriteString(`<p class="x" title="` + t.Token() + `">` + t.Token() + `</p>`)
	}
	b.WriteString(`<p>{{ DEAL.Title }}</p>`)
	return b.String()
}

func valuesOf(v string) *Values {
	s := &v
	d := decimal.NewNullDecimal(decimal.RequireFromString("1234.5"))
	a := Amount{Text: "1234.50", Valid: true}
	return &Values{
		Merge: MergeData{
			Deal:      Deal{ID: 1, Title: v, Currency: v, Status: v, Value: a, ExpectedCloseDate: s, CompanyName: s},
			StageName: v, OwnerName: v,
			Company: &Company{Name: v, Domain: s, Website: s, Phone: s, Industry: s, AddressStreet: s,
				AddressCity: s, AddressState: s, AddressZip: s, AddressCountry: s},
			Contact: &Contact{FirstName: v, LastName: v, Email: s, Phone: s, Mobile: s, JobTitle: s},
			Quote: &Quote{QuoteNumber: v, Status: v, Currency: v, ValidUntil: s, Subtotal: a, Tax: a, Total: a, TaxRate: d,
				LineItems: []LineItem{{Description: v, Quantity: d, UnitPrice: a, Amount: a}, {Description: v}}},
		},
		Contract: ContractValues{Number: v, Title: v, StartDate: v, EndDate: v, EffectiveDate: v,
			TerminationDate: v, TermMonths: 12, PartnerRef: v, Today: v},
	}
}

// skeleton lists the elements and attribute names of a parsed document,
// in document order: the structure, without any text or attribute value.
func skeleton(t testing.TB, doc string) []string {
	t.Helper()
	root, err := html.Parse(strings.NewReader(doc))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode {
			out = append(out, "<"+n.Data)
			for _, a := range n.Attr {
				out = append(out, "@"+a.Key)
			}
		}
		if n.Type == html.CommentNode {
			out = append(out, "<!--")
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(root)
	return out
}

// FuzzResolve proves that no value can produce markup: whatever the merge
// data holds, the resolved document has exactly the elements and
// attributes of the same template resolved with harmless values.
func FuzzResolve(f *testing.F) {
	for _, seed := range []string{
		"", "Acme", `<script>alert(1)</script>`, `"><img src=x onerror=alert(1)>`, `' onmouseover='x`,
		"{{deal.title}}", "</p><iframe src=//evil>", "<!--", "&lt;b&gt;", "\x00<b>", "<svg/onload=alert(1)>",
		"]]><![CDATA[<b>", "<a href=javascript:alert(1)>x</a>", "\"\u00a0<\u2028>",
	} {
		f.Add(seed)
	}
	c := DefaultCatalogue()
	tpl := fuzzTemplate(c)
	var r0 Resolution
	want := skeleton(f, c.ResolveHTML(tpl, valuesOf("x"), &r0))
	f.Fuzz(func(t *testing.T, v string) {
		var r Resolution
		out := c.ResolveHTML(tpl, valuesOf(v), &r)
		if diff := cmp.Diff(want, skeleton(t, out)); diff != "" {
			t.Fatalf("value %q changed the document structure (-want +got):\n%s", v, diff)
		}
	})
}

func TestResolve(t *testing.T) {
	t.Parallel()
	c := DefaultCatalogue()
	v := valuesOf("A&B")
	v.Merge.Company.Phone = nil
	v.Merge.Contact.Phone, v.Merge.Contact.Mobile = nil, nil
	var r Resolution
	got := c.ResolveHTML(`<p>{{ licensee.company_name }}|{{LICENSEE.PHONE}}|{{licensee.contact_phone}}|{{deal.value}}|{{unknown.tag}}|{{licensee.phone}}</p>`, v, &r)
	if want := `<p>A&amp;B|||A&amp;B 1,234.50|{{unknown.tag}}|</p>`; got != want {
		t.Errorf("ResolveHTML = %q, want %q", got, want)
	}
	if diff := cmp.Diff([]string{"{{licensee.phone}}", "{{licensee.contact_phone}}", "{{unknown.tag}}"}, r.Unresolved()); diff != "" {
		t.Errorf("unresolved (-want +got):\n%s", diff)
	}
	var r2 Resolution
	cell := c.ResolveText(`{{contract.number}} <b> {{ Page }}/{{pages}}`, valuesOf("CTR-1"), &r2)
	if want := `CTR-1 <b> {{page}}/{{pages}}`; cell != want {
		t.Errorf("ResolveText = %q, want %q", cell, want)
	}
	// A value that looks like a page field stays text in the renderers.
	var r3 Resolution
	cell = c.ResolveText(`{{licensee.company_name}} {{page}}`, valuesOf("Acme {{ Pages }} Ltd"), &r3)
	if diff := cmp.Diff([]string{"Acme {\u200b{ Pages }} Ltd ", "{{page}}"}, renderq.SplitPlaceholders(cell)); diff != "" {
		t.Errorf("cell parts (-want +got):\n%s", diff)
	}
}

func TestCheck(t *testing.T) {
	t.Parallel()
	c := DefaultCatalogue()
	got := c.Check("content", "{{deal.title}} {{ deal.foo }} {{page}} {{deal.foo}} {{ deal.foo }} {{}}", false)
	var msgs []string
	for _, fe := range got {
		msgs = append(msgs, fe.Field+": "+fe.Message)
	}
	want := []string{"content: unknown merge tag {{ deal.foo }}", "content: unknown merge tag {{page}}",
		"content: unknown merge tag {{deal.foo}}", "content: unknown merge tag {{}}"}
	if diff := cmp.Diff(want, msgs); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if errs := c.Check("footer_center", "Page {{ PAGE }} of {{pages}} {{contract.number}}", true); len(errs) != 0 {
		t.Errorf("footer errors: %v", errs)
	}
}

func TestMoney(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in, want string
	}{
		{"0", "0"},
		{"5.00", "5.00"},
		{"999.999", "999.999"},
		{"1234567.891", "1,234,567.891"},
		{"-1234.50", "-1,234.50"},
		{"100000", "100,000"},
		{"123456", "123,456"},
		{"0.188", "0.188"},
	}
	for _, tc := range tests {
		a, err := parseAmount(tc.in)
		if err != nil {
			t.Fatalf("parseAmount(%q): %v", tc.in, err)
		}
		if diff := cmp.Diff(tc.want, money(a)); diff != "" {
			t.Errorf("money(%s) (-want +got):\n%s", tc.in, diff)
		}
	}
	if got := money(Amount{}); got != "" {
		t.Errorf("money of no amount = %q, want \"\"", got)
	}
}

func TestAmountJSON(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in      string
		want    Amount
		wantErr bool
	}{
		{`"2.698"`, Amount{Text: "2.698", Valid: true}, false},
		{`"1200"`, Amount{Text: "1200", Valid: true}, false},
		{`"1.250"`, Amount{Text: "1.250", Valid: true}, false},
		{`12.50`, Amount{Text: "12.50", Valid: true}, false},
		{`null`, Amount{}, false},
		{`""`, Amount{}, false},
		{`"1e3"`, Amount{}, true},
		{`"1,000.00"`, Amount{}, true},
		{`"+5"`, Amount{}, true},
		{`"USD 5"`, Amount{}, true},
		{`true`, Amount{}, true},
	}
	for _, tc := range tests {
		var got Amount
		err := json.Unmarshal([]byte(tc.in), &got)
		if (err != nil) != tc.wantErr {
			t.Errorf("Unmarshal(%s) error = %v, want error %v", tc.in, err, tc.wantErr)
			continue
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("Unmarshal(%s) (-want +got):\n%s", tc.in, diff)
		}
	}
}

// TestResolveMoneyPerCurrency resolves merge data shaped as deals' merge
// endpoint sends it (money as strings with exactly the currency's minor
// digits, quantity and tax rate as numbers) and checks that every amount
// prints with deals' digits: no padding to two decimals, no re-rounding,
// and the line amount deals rounded rather than quantity × unit price.
func TestResolveMoneyPerCurrency(t *testing.T) {
	t.Parallel()
	const content = `<p>{{deal.value}}|{{deal.amount}}|{{quote.subtotal}}|{{quote.tax_rate}}|{{quote.tax}}|{{quote.total}}</p>{{quote.line_items}}`
	const cell = `{{deal.value}} / {{quote.total}}`
	row := func(desc, qty, price, amount string) string {
		return "<tr><td>" + desc + "</td><td>" + qty + "</td><td>" + price + "</td><td>" + amount + "</td></tr>"
	}
	table := func(rows ...string) string {
		return `<table class="line-items"><thead><tr><th>Description</th><th>Quantity</th><th>Unit price</th><th>Amount</th></tr></thead><tbody>` +
			strings.Join(rows, "") + `</tbody></table>`
	}
	tests := []struct {
		name        string
		merge       string
		wantContent string
		wantCell    string
	}{
		{
			// 0 minor digits: 1.5 × 301 = 451.5, which deals rounds half to even to 452.
			name: "JPY",
			merge: `{"deal": {"id": 1, "title": "Yen deal", "value": "1234567", "currency": "JPY"},
				"quote": {"currency": "JPY", "subtotal": "3467", "tax_rate": 10, "tax": "347", "total": "3814", "line_items": [
					{"description": "Support hours", "quantity": 1.5, "unit_price": "301", "amount": "452"},
					{"description": "Box", "quantity": 3, "unit_price": "1005", "amount": "3015"}]}}`,
			wantContent: `<p>JPY 1,234,567|1,234,567|JPY 3,467|10%|JPY 347|JPY 3,814</p>` +
				table(row("Support hours", "1.5", "301", "452"), row("Box", "3", "1,005", "3,015")),
			wantCell: "JPY 1,234,567 / JPY 3,814",
		},
		{
			// 2 minor digits: 1.5 × 0.25 = 0.375, which deals rounds to 0.38.
			name: "EUR",
			merge: `{"deal": {"id": 2, "title": "Euro deal", "value": "12500.50", "currency": "EUR"},
				"quote": {"currency": "EUR", "subtotal": "60.35", "tax_rate": 19, "tax": "11.47", "total": "71.82", "line_items": [
					{"description": "Hours", "quantity": 1.5, "unit_price": "0.25", "amount": "0.38"},
					{"description": "Licence", "quantity": 3, "unit_price": "19.99", "amount": "59.97"}]}}`,
			wantContent: `<p>EUR 12,500.50|12,500.50|EUR 60.35|19%|EUR 11.47|EUR 71.82</p>` +
				table(row("Hours", "1.5", "0.25", "0.38"), row("Licence", "3", "19.99", "59.97")),
			wantCell: "EUR 12,500.50 / EUR 71.82",
		},
		{
			// 3 minor digits: the total 2.698 must not become 2.70, nor 2.510 become 2.51.
			name: "KWD",
			merge: `{"deal": {"id": 3, "title": "Dinar deal", "value": "1250.000", "currency": "KWD"},
				"quote": {"currency": "KWD", "subtotal": "2.510", "tax_rate": 7.5, "tax": "0.188", "total": "2.698", "line_items": [
					{"description": "Kit", "quantity": 2, "unit_price": "1.255", "amount": "2.510"}]}}`,
			wantContent: `<p>KWD 1,250.000|1,250.000|KWD 2.510|7.5%|KWD 0.188|KWD 2.698</p>` +
				table(row("Kit", "2", "1.255", "2.510")),
			wantCell: "KWD 1,250.000 / KWD 2.698",
		},
	}
	c := DefaultCatalogue()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var md MergeData
			if err := json.Unmarshal([]byte(tc.merge), &md); err != nil {
				t.Fatal(err)
			}
			v := &Values{Merge: md}
			var r Resolution
			if diff := cmp.Diff(tc.wantContent, c.ResolveHTML(content, v, &r)); diff != "" {
				t.Errorf("content (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantCell, c.ResolveText(cell, v, &r)); diff != "" {
				t.Errorf("header cell (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff([]string{}, r.Unresolved()); diff != "" {
				t.Errorf("unresolved (-want +got):\n%s", diff)
			}
		})
	}
}

func TestAddMonthsAndRenewal(t *testing.T) {
	t.Parallel()
	d := func(s string) time.Time { t, _ := ParseDate(s); return t }
	tests := []struct {
		from, want string
		n          int
	}{
		{"2026-01-31", "2026-02-28", 1}, {"2024-01-31", "2024-02-29", 1}, {"2026-01-15", "2029-01-15", 36},
		{"2026-12-31", "2027-06-30", 6}, {"2026-03-31", "2025-02-28", -13},
	}
	for _, tc := range tests {
		if got := FormatDate(AddMonths(d(tc.from), tc.n)); got != tc.want {
			t.Errorf("AddMonths(%s, %d) = %s, want %s", tc.from, tc.n, got, tc.want)
		}
	}
	next, k := RenewedTermination(d("2020-01-31"), d("2020-01-31"), 12, d("2026-05-01"))
	if FormatDate(next) != "2027-01-31" || k != 7 {
		t.Errorf("RenewedTermination = %s, %d", FormatDate(next), k)
	}
	if _, k := RenewedTermination(d("2026-05-01"), d("2026-05-01"), 12, d("2026-05-01")); k != 0 {
		t.Errorf("termination today must not renew, got %d terms", k)
	}
}

// TestRenewedTerminationFromAnchor: boundaries are counted from the
// anchor, not from the previous (clamped) termination date, so daily runs
// and one catch-up run agree.
func TestRenewedTerminationFromAnchor(t *testing.T) {
	t.Parallel()
	d := func(s string) time.Time { t, _ := ParseDate(s); return t }
	tests := []struct {
		name                       string
		anchor, termination, today string
		months                     int
		want                       string
		terms                      int
	}{
		{"monthly from Jan 31: first", "2026-01-31", "2026-01-31", "2026-02-01", 1, "2026-02-28", 1},
		{"monthly from Jan 31: after Feb 28", "2026-01-31", "2026-02-28", "2026-03-01", 1, "2026-03-31", 1},
		{"monthly from Jan 31: after Mar 31", "2026-01-31", "2026-03-31", "2026-04-01", 1, "2026-04-30", 1},
		{"monthly from Jan 31: catch-up", "2026-01-31", "2026-01-31", "2026-04-01", 1, "2026-04-30", 3},
		{"monthly effective Dec 31", "2025-12-31", "2026-02-28", "2026-03-01", 1, "2026-03-31", 1},
		{"yearly from leap day: 2025", "2024-02-29", "2025-02-28", "2025-03-01", 12, "2026-02-28", 1},
		{"yearly from leap day: into 2028", "2024-02-29", "2027-02-28", "2027-03-01", 12, "2028-02-29", 1},
		{"yearly from leap day: catch-up", "2024-02-29", "2025-02-28", "2027-03-01", 12, "2028-02-29", 3},
		{"due today is not renewed", "2024-02-29", "2025-02-28", "2025-02-28", 12, "2025-02-28", 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			next, k := RenewedTermination(d(tc.anchor), d(tc.termination), tc.months, d(tc.today))
			if diff := cmp.Diff([]any{tc.want, tc.terms}, []any{FormatDate(next), k}); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestTransitions(t *testing.T) {
	t.Parallel()
	allowed := map[Status][]Status{}
	for _, from := range Statuses {
		for _, to := range Statuses {
			if CanTransition(Status(from), Status(to)) {
				allowed[Status(from)] = append(allowed[Status(from)], Status(to))
			}
		}
	}
	want := map[Status][]Status{
		Draft: {Active, Archived}, Active: {Executed, Expired, Terminated, Archived},
		Executed: {Expired, Terminated, Archived}, Expired: {Active, Archived}, Terminated: {Archived},
	}
	if diff := cmp.Diff(want, allowed); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestSanitizeFilenameAndDisposition(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, name, header string }{
		{"../../x.pdf", "x.pdf", `attachment; filename="x.pdf"; filename*=UTF-8''x.pdf`},
		{"a\"\r\nSet-Cookie:.pdf", "a_Set-Cookie_.pdf", `attachment; filename="a_Set-Cookie_.pdf"; filename*=UTF-8''a_Set-Cookie_.pdf`},
		{"C:\\docs\\100% sure;.pdf", "100% sure_.pdf", `attachment; filename="100_ sure_.pdf"; filename*=UTF-8''100%25%20sure_.pdf`},
		{"Ünïcode €.pdf", "Ünïcode €.pdf", `attachment; filename="_n_code _.pdf"; filename*=UTF-8''%C3%9Cn%C3%AFcode%20%E2%82%AC.pdf`},
		{"..", "", ""},
	}
	for _, tc := range tests {
		got := SanitizeFilename(tc.in)
		if got != tc.name {
			t.Errorf("SanitizeFilename(%q) = %q, want %q", tc.in, got, tc.name)
		}
		if tc.header != "" {
			if h := ContentDisposition(got); h != tc.header {
				t.Errorf("ContentDisposition(%q) = %q, want %q", got, h, tc.header)
			}
		}
	}
	long := SanitizeFilename(strings.Repeat("é", 200))
	if len(long) > 255 || !strings.HasPrefix(long, "é") || strings.ContainsRune(long, '\uFFFD') {
		t.Errorf("long name cut badly: %d bytes", len(long))
	}
}

func TestSanitizer(t *testing.T) {
	t.Parallel()
	s := NewSanitizer()
	tests := []struct{ in, want string }{
		{`<p style="margin: 10mm 0; padding-left: 2em; color: #333">x</p>`, `<p style="margin: 10mm 0; padding-left: 2em; color: #333">x</p>`},
		{`<p style="width: expression(alert(1)); background: url(x)">x</p>`, `<p>x</p>`},
		{`<img src="http://evil.example/x.png" alt="a">`, `<img alt="a">`},
		{`<img src="/local/file.png">`, ``},
		{`<img src="data:image/png;base64,iVBORw0KGgo=" alt="logo">`, `<img src="data:image/png;base64,iVBORw0KGgo=" alt="logo">`},
		{`<img src="data:image/svg+xml;base64,PHN2Zz48L3N2Zz4=">`, ``},
		{`<a href="mailto:legal@example.com">mail</a>`, `<a href="mailto:legal@example.com">mail</a>`},
		{`<a href="data:image/png;base64,iVBORw0KGgo=">x</a>`, `x`},
		{`<table><tr><td colspan="2">{{deal.title}}</td></tr></table>`, `<table><tr><td colspan="2">{{deal.title}}</td></tr></table>`},
		{`<svg><script>alert(1)</script></svg><style>body{}</style>`, ``},
	}
	for _, tc := range tests {
		if got := s.HTML(tc.in); got != tc.want {
			t.Errorf("HTML(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
