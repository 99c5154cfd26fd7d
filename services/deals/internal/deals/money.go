package deals

import (
	"regexp"
	"strings"

	"github.com/shopspring/decimal"

	"github.com/opencrm/crm/pkg/contract/dealsapi"
)

// currencies maps each active ISO 4217 code to its minor unit (the number
// of decimal digits a price in that currency may carry). The table lives in
// code, not in the database: it changes only with the standard, and every
// replica must agree on it without a migration.
var currencies = map[string]int32{
	"AED": 2, "AFN": 2, "ALL": 2, "AMD": 2, "ANG": 2, "AOA": 2, "ARS": 2, "AUD": 2, "AWG": 2, "AZN": 2,
	"BAM": 2, "BBD": 2, "BDT": 2, "BGN": 2, "BHD": 3, "BIF": 0, "BMD": 2, "BND": 2, "BOB": 2, "BRL": 2,
	"BSD": 2, "BTN": 2, "BWP": 2, "BYN": 2, "BZD": 2, "CAD": 2, "CDF": 2, "CHF": 2, "CLF": 4, "CLP": 0,
	"CNY": 2, "COP": 2, "CRC": 2, "CUP": 2, "CVE": 2, "CZK": 2, "DJF": 0, "DKK": 2, "DOP": 2, "DZD": 2,
	"EGP": 2, "ERN": 2, "ETB": 2, "EUR": 2, "FJD": 2, "FKP": 2, "GBP": 2, "GEL": 2, "GHS": 2, "GIP": 2,
	"GMD": 2, "GNF": 0, "GTQ": 2, "GYD": 2, "HKD": 2, "HNL": 2, "HTG": 2, "HUF": 2, "IDR": 2, "ILS": 2,
	"INR": 2, "IQD": 3, "IRR": 2, "ISK": 0, "JMD": 2, "JOD": 3, "JPY": 0, "KES": 2, "KGS": 2, "KHR": 2,
	"KMF": 0, "KPW": 2, "KRW": 0, "KWD": 3, "KYD": 2, "KZT": 2, "LAK": 2, "LBP": 2, "LKR": 2, "LRD": 2,
	"LSL": 2, "LYD": 3, "MAD": 2, "MDL": 2, "MGA": 2, "MKD": 2, "MMK": 2, "MNT": 2, "MOP": 2, "MRU": 2,
	"MUR": 2, "MVR": 2, "MWK": 2, "MXN": 2, "MYR": 2, "MZN": 2, "NAD": 2, "NGN": 2, "NIO": 2, "NOK": 2,
	"NPR": 2, "NZD": 2, "OMR": 3, "PAB": 2, "PEN": 2, "PGK": 2, "PHP": 2, "PKR": 2, "PLN": 2, "PYG": 0,
	"QAR": 2, "RON": 2, "RSD": 2, "RUB": 2, "RWF": 0, "SAR": 2, "SBD": 2, "SCR": 2, "SDG": 2, "SEK": 2,
	"SGD": 2, "SHP": 2, "SLE": 2, "SOS": 2, "SRD": 2, "SSP": 2, "STN": 2, "SVC": 2, "SYP": 2, "SZL": 2,
	"THB": 2, "TJS": 2, "TMT": 2, "TND": 3, "TOP": 2, "TRY": 2, "TTD": 2, "TWD": 2, "TZS": 2, "UAH": 2,
	"UGX": 0, "USD": 2, "UYI": 0, "UYU": 2, "UYW": 4, "UZS": 2, "VED": 2, "VES": 2, "VND": 0, "VUV": 0,
	"WST": 2, "XAF": 0, "XCD": 2, "XOF": 0, "XPF": 0, "YER": 2, "ZAR": 2, "ZMW": 2, "ZWG": 2,
}

// DefaultCurrency is used when a deal names none.
const DefaultCurrency = "USD"

// MinorUnits returns the currency's decimal digits and whether the code is
// known. Codes are matched exactly (callers normalise case first).
func MinorUnits(code string) (int32, bool) {
	d, ok := currencies[code]
	return d, ok
}

// NormalizeCurrency trims and upper-cases a code, so "usd" is USD.
func NormalizeCurrency(code string) string { return strings.ToUpper(strings.TrimSpace(code)) }

// maxMoney bounds every stored amount so it fits numeric(19,4).
var maxMoney = decimal.New(1, 15)

// Money is an exact amount rendered with a fixed number of decimals. It
// goes on the wire as a string (String): a JSON number would be read as a
// binary float by most clients and lose cents. Quote amounts carry exactly
// the currency's minor digits ("1234.50", "1200" for JPY, "1.250" for
// KWD); a deal's value always carries 2 (see NewDealValue).
type Money struct {
	Amount decimal.Decimal
	Digits int32
}

// NewMoney pairs an amount with the minor unit of currency (2 if unknown).
// Quotes use it: their amounts are computed at the currency's minor unit.
func NewMoney(amount decimal.Decimal, currency string) Money {
	d, ok := MinorUnits(currency)
	if !ok {
		d = 2
	}
	return Money{Amount: amount, Digits: d}
}

// DealValuePlaces is the scale a deal's value is rendered with, whatever
// its currency: a decimal with 2 places ("1200.00" JPY,
// "1.25" KWD).
const DealValuePlaces int32 = 2

// NewDealValue is a deal's value as the API renders it: exactly 2 places.
func NewDealValue(amount decimal.Decimal) Money {
	return Money{Amount: amount, Digits: DealValuePlaces}
}

// DealValueDigits is how many decimals a deal value in currency may carry:
// the currency's minor digits, but never more than the 2 places a value
// is rendered with (JPY 0, USD 2, KWD 2). An amount that passes it renders
// exactly, never rounded.
func DealValueDigits(currency string) int32 {
	d, ok := MinorUnits(currency)
	if !ok || d > DealValuePlaces {
		return DealValuePlaces
	}
	return d
}

// String is the fixed-point text of the amount with exactly Digits
// decimals. It never rounds: an amount with more significant decimals
// than Digits (a deal value stored before values were limited to 2 places,
// KWD 1.255) is written with its own digits rather than misstated.
func (m Money) String() string {
	if !m.Amount.Equal(m.Amount.Truncate(m.Digits)) {
		return m.Amount.String()
	}
	return m.Amount.StringFixed(m.Digits)
}

// A plain decimal with an optional small exponent: nothing that could make
// the decimal library allocate a giant integer ("1e999999999").
var decimalText = regexp.MustCompile(`^-?[0-9]{1,30}(\.[0-9]{1,30})?([eE][+-]?[0-9]{1,2})?$`)

// parseDecimal parses text and returns the reason it is unacceptable.
func parseDecimal(text dealsapi.Decimal) (decimal.Decimal, string) {
	if !decimalText.MatchString(string(text)) {
		return decimal.Decimal{}, "must be a decimal number"
	}
	d, err := decimal.NewFromString(string(text))
	if err != nil {
		return decimal.Decimal{}, "must be a decimal number"
	}
	return d, ""
}

// ParseAmount checks a money amount as sent: a non-negative decimal with
// at most digits decimal places, below 10^15.
func ParseAmount(text dealsapi.Decimal, digits int32) (decimal.Decimal, string) {
	d, msg := parseDecimal(text)
	if msg != "" {
		return d, msg
	}
	if d.IsNegative() {
		return d, "must not be negative"
	}
	if !d.Equal(d.Truncate(digits)) {
		return d, decimalPlaces(digits)
	}
	if d.GreaterThanOrEqual(maxMoney) {
		return d, "must be less than 1000000000000000"
	}
	return d.Truncate(digits), ""
}

func decimalPlaces(digits int32) string {
	switch digits {
	case 0:
		return "must be a whole number in this currency"
	case 1:
		return "must have at most 1 decimal place in this currency"
	default:
		return "must have at most " + string(rune('0'+digits)) + " decimal places in this currency"
	}
}

// Round rounds half to even at the currency's minor unit (banker's
// rounding), so rounding errors do not drift in one direction over many
// quotes: 10.005 → 10.00, 10.015 → 10.02.
func Round(d decimal.Decimal, digits int32) decimal.Decimal { return d.RoundBank(digits) }
