package deals

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/shopspring/decimal"

	"github.com/opencrm/crm/pkg/contract/dealsapi"
)

func TestParseAmount(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in      dealsapi.Decimal
		digits  int32
		want    string
		wantErr bool
	}{
		{"1234.5", 2, "1234.5", false},
		{"1234.50", 2, "1234.5", false},
		{"0", 0, "0", false},
		{"1.250", 3, "1.25", false},
		{"1.2000", 2, "1.2", false},
		{"1e2", 0, "100", false},
		{"999999999999999.99", 2, "999999999999999.99", false},
		{"1000000000000000", 2, "", true},
		{"1.234", 2, "", true},
		{"1.5", 0, "", true},
		{"-1", 2, "", true},
		{"abc", 2, "", true},
		{"", 2, "", true},
		{"1,5", 2, "", true},
		{"NaN", 2, "", true},
		{"1e999999999", 2, "", true},
		{"true", 2, "", true}, // a JSON true, kept as its text
	}
	for _, tc := range tests {
		got, msg := ParseAmount(tc.in, tc.digits)
		if (msg != "") != tc.wantErr {
			t.Errorf("ParseAmount(%q, %d) message %q, want error %v", tc.in, tc.digits, msg, tc.wantErr)
			continue
		}
		if !tc.wantErr && got.String() != tc.want {
			t.Errorf("ParseAmount(%q, %d) = %s, want %s", tc.in, tc.digits, got, tc.want)
		}
	}
}

// Quote money keeps the currency's minor digits.
func TestMoneyString(t *testing.T) {
	t.Parallel()
	tests := []struct {
		amount, currency, want string
	}{
		{"1234.5", "USD", "1234.50"},
		{"1200", "JPY", "1200"},
		{"1.25", "KWD", "1.250"},
		{"0", "EUR", "0.00"},
		{"0.1", "CLF", "0.1000"},
	}
	for _, tc := range tests {
		if got := NewMoney(decimal.RequireFromString(tc.amount), tc.currency).String(); got != tc.want {
			t.Errorf("Money(%s %s) = %s, want %s", tc.amount, tc.currency, got, tc.want)
		}
	}
}

// A deal value has exactly 2 places in every currency, and is
// never rounded: an amount with more decimals (stored before the limit)
// keeps them.
func TestDealValueString(t *testing.T) {
	t.Parallel()
	tests := []struct{ amount, want string }{
		{"1234.5", "1234.50"},
		{"1200", "1200.00"},
		{"1.25", "1.25"},
		{"1.2500", "1.25"},
		{"0", "0.00"},
		{"999999999999999.99", "999999999999999.99"},
		{"1.255", "1.255"},
		{"0.0001", "0.0001"},
	}
	for _, tc := range tests {
		if got := NewDealValue(decimal.RequireFromString(tc.amount)).String(); got != tc.want {
			t.Errorf("deal value %s = %s, want %s", tc.amount, got, tc.want)
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
		return LineItem{Quantity: q, UnitPrice: Money{p, digits}, Amount: Money{Round(q.Mul(p), digits), digits}}
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
