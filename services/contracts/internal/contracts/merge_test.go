package contracts

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/shopspring/decimal"
	"golang.org/x/net/html"
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
	return &Values{
		Merge: MergeData{
			Deal:      Deal{ID: 1, Title: v, Currency: v, Status: v, Value: d, ExpectedCloseDate: s, CompanyName: s},
			StageName: v, OwnerName: v,
			Company: &Company{Name: v, Domain: s, Website: s, Phone: s, Industry: s, AddressStreet: s,
				AddressCity: s, AddressState: s, AddressZip: s, AddressCountry: s},
			Contact: &Contact{FirstName: v, LastName: v, Email: s, Phone: s, Mobile: s, JobTitle: s},
			Quote: &Quote{QuoteNumber: v, Status: v, Currency: v, ValidUntil: s, Subtotal: d, Tax: d, Total: d, TaxRate: d,
				LineItems: []LineItem{{Description: v, Quantity: d, UnitPrice: d}, {Description: v}}},
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
	for in, want := range map[string]string{"0": "0.00", "5": "5.00", "999.999": "1,000.00", "1234567.891": "1,234,567.89", "-1234.5": "-1,234.50", "100000": "100,000.00"} {
		if got := money(decimal.NewNullDecimal(decimal.RequireFromString(in))); got != want {
			t.Errorf("money(%s) = %s, want %s", in, got, want)
		}
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
	next, k := RenewedTermination(d("2020-01-31"), 12, d("2026-05-01"))
	if FormatDate(next) != "2027-01-31" || k != 7 {
		t.Errorf("RenewedTermination = %s, %d", FormatDate(next), k)
	}
	if _, k := RenewedTermination(d("2026-05-01"), 12, d("2026-05-01")); k != 0 {
		t.Errorf("termination today must not renew, got %d terms", k)
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
		{`<table><tr><td colspan="2">{{deal.title}}</td></tr></table>`, `<table><tr><td colspan="2">{{deal.title}}</td></tr></table>`},
		{`<svg><script>alert(1)</script></svg><style>body{}</style>`, ``},
	}
	for _, tc := range tests {
		if got := s.HTML(tc.in); got != tc.want {
			t.Errorf("HTML(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
