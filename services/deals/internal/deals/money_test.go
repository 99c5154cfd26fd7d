package deals

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/shopspring/decimal"
)

func TestParseAmount(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in      Number
		digits  int32
		want    string
		wantErr bool
	}{
		{Num("1234.5"), 2, "1234.5", false},
		{Num("1234.50"), 2, "1234.5", false},
		{Num("0"), 0, "0", false},
		{Num("1.250"), 3, "1.25", false},
		{Num("1.2000"), 2, "1.2", false},
		{Num("1e2"), 0, "100", false},
		{Num("999999999999999.99"), 2, "999999999999999.99", false},
		{Num("1000000000000000"), 2, "", true},
		{Num("1.234"), 2, "", true},
		{Num("1.5"), 0, "", true},
		{Num("-1"), 2, "", true},
		{Num("abc"), 2, "", true},
		{Num(""), 2, "", true},
		{Num("1,5"), 2, "", true},
		{Num("NaN"), 2, "", true},
		{Num("1e999999999"), 2, "", true},
		{Number{Set: true, BadType: true}, 2, "", true},
	}
	for _, tc := range tests {
		got, msg := ParseAmount(tc.in, tc.digits)
		if (msg != "") != tc.wantErr {
			t.Errorf("ParseAmount(%q, %d) message %q, want error %v", tc.in.Text, tc.digits, msg, tc.wantErr)
			continue
		}
		if !tc.wantErr && got.String() != tc.want {
			t.Errorf("ParseAmount(%q, %d) = %s, want %s", tc.in.Text, tc.digits, got, tc.want)
		}
	}
}

func TestNumberJSON(t *testing.T) {
	t.Parallel()
	var in struct {
		A, B, C, D, E Number
	}
	if err := json.Unmarshal([]byte(`{"A":19.99,"B":"19.99","C":null,"D":true,"E":" "}`), &in); err != nil {
		t.Fatal(err)
	}
	got := []Number{in.A, in.B, in.C, in.D, in.E}
	want := []Number{
		{Text: "19.99", Set: true}, {Text: "19.99", Set: true}, {Set: true, Null: true},
		{Set: true, BadType: true}, {Set: true, Null: true},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("numbers (-want +got):\n%s", diff)
	}
}

// Quote money keeps the currency's minor digits.
func TestMoneyJSON(t *testing.T) {
	t.Parallel()
	tests := []struct {
		amount, currency, want string
	}{
		{"1234.5", "USD", `"1234.50"`},
		{"1200", "JPY", `"1200"`},
		{"1.25", "KWD", `"1.250"`},
		{"0", "EUR", `"0.00"`},
		{"0.1", "CLF", `"0.1000"`},
	}
	for _, tc := range tests {
		b, err := json.Marshal(NewMoney(decimal.RequireFromString(tc.amount), tc.currency))
		if err != nil || string(b) != tc.want {
			t.Errorf("Money(%s %s) = %s %v, want %s", tc.amount, tc.currency, b, err, tc.want)
		}
	}
}

// A deal value has exactly 2 places in every currency, and is
// never rounded: an amount with more decimals (stored before the limit)
// keeps them.
func TestDealValueJSON(t *testing.T) {
	t.Parallel()
	tests := []struct{ amount, want string }{
		{"1234.5", `"1234.50"`},
		{"1200", `"1200.00"`},
		{"1.25", `"1.25"`},
		{"1.2500", `"1.25"`},
		{"0", `"0.00"`},
		{"999999999999999.99", `"999999999999999.99"`},
		{"1.255", `"1.255"`},
		{"0.0001", `"0.0001"`},
	}
	for _, tc := range tests {
		b, err := json.Marshal(NewDealValue(decimal.RequireFromString(tc.amount)))
		if err != nil || string(b) != tc.want {
			t.Errorf("deal value %s = %s %v, want %s", tc.amount, b, err, tc.want)
		}
	}
}

// Money read back from the JSON it wrote renders the same text: a deal
// an idempotent create stored is answered on a retry as it was the first
// time. Text that is not a decimal string is refused.
func TestMoneyRoundTrip(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		money   Money
		wantErr bool
	}{
		{"deal value", NewDealValue(decimal.RequireFromString("1234.5")), false},
		{"deal value in yen", NewDealValue(decimal.RequireFromString("1200")), false},
		{"deal value with old extra digits", NewDealValue(decimal.RequireFromString("1.255")), false},
		{"yen", NewMoney(decimal.RequireFromString("1200"), "JPY"), false},
		{"dinar", NewMoney(decimal.RequireFromString("1.25"), "KWD"), false},
		{"zero", NewMoney(decimal.Zero, "EUR"), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			first, err := json.Marshal(tc.money)
			if err != nil {
				t.Fatal(err)
			}
			var back Money
			if err := json.Unmarshal(first, &back); err != nil {
				t.Fatal(err)
			}
			again, err := json.Marshal(back)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(string(first), string(again)); diff != "" {
				t.Errorf("JSON after a round trip (-want +got):\n%s", diff)
			}
		})
	}
	for _, bad := range []string{`12.5`, `"twelve"`, `""`, `{}`} {
		var m Money
		if err := json.Unmarshal([]byte(bad), &m); err == nil {
			t.Errorf("Unmarshal(%s) = %v, want an error", bad, m)
		}
	}
}

// A deal value may carry min(2, minor digits) decimals.
func TestDealValueDigits(t *testing.T) {
	t.Parallel()
	for code, want := range map[string]int32{"USD": 2, "EUR": 2, "JPY": 0, "KRW": 0, "KWD": 2, "BHD": 2, "CLF": 2, "XXX": 2} {
		if got := DealValueDigits(code); got != want {
			t.Errorf("DealValueDigits(%s) = %d, want %d", code, got, want)
		}
	}
}

func TestTotals(t *testing.T) {
	t.Parallel()
	line := func(qty, price string, digits int32) LineItem {
		q, p := decimal.RequireFromString(qty), decimal.RequireFromString(price)
		return LineItem{Quantity: Quantity{q}, UnitPrice: Money{p, digits}, Amount: Money{Round(q.Mul(p), digits), digits}}
	}
	tests := []struct {
		name                 string
		lines                []LineItem
		rate                 string
		digits               int32
		subtotal, tax, total string
	}{
		{"3 × 19.99", []LineItem{line("3", "19.99", 2)}, "0", 2, "59.97", "0", "59.97"},
		{"half-even down", []LineItem{line("1", "100.05", 2)}, "10", 2, "100.05", "10", "110.05"},
		{"half-even up", []LineItem{line("1", "100.15", 2)}, "10", 2, "100.15", "10.02", "110.17"},
		{"JPY", []LineItem{line("3", "1005", 0)}, "10", 0, "3015", "302", "3317"},
		{"many lines no float drift", []LineItem{line("1", "0.10", 2), line("1", "0.20", 2)}, "0", 2, "0.3", "0", "0.3"},
		{"amount rounds per line", []LineItem{line("0.5", "0.05", 2), line("0.5", "0.05", 2)}, "0", 2, "0.04", "0", "0.04"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sub, tax, total := Totals(tc.lines, decimal.RequireFromString(tc.rate), tc.digits)
			got := []string{sub.String(), tax.String(), total.String()}
			if diff := cmp.Diff([]string{tc.subtotal, tc.tax, tc.total}, got); diff != "" {
				t.Errorf("subtotal, tax, total (-want +got):\n%s", diff)
			}
		})
	}
}

func TestEveryCurrencyHasSaneMinorUnits(t *testing.T) {
	t.Parallel()
	for code, d := range currencies {
		if len(code) != 3 || NormalizeCurrency(code) != code || d < 0 || d > 4 {
			t.Errorf("currency %q has minor units %d", code, d)
		}
	}
	for _, c := range []struct {
		code string
		want int32
	}{{"USD", 2}, {"EUR", 2}, {"JPY", 0}, {"KWD", 3}, {"BHD", 3}, {"CLF", 4}} {
		if d, ok := MinorUnits(c.code); !ok || d != c.want {
			t.Errorf("MinorUnits(%s) = %d %v, want %d", c.code, d, ok, c.want)
		}
	}
}
