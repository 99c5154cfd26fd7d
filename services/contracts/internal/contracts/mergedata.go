package contracts

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/shopspring/decimal"
)

// MergeData is what the deals context returns from
// deals' internal merge route (dealsapi.RouteMerge): the deal with the records a contract
// merges from. Only the fields the catalogue uses are decoded; unknown
// fields are ignored so the deals context can grow its records freely.
type MergeData struct {
	Deal      Deal     `json:"deal"`
	StageName string   `json:"stage_name"`
	OwnerName string   `json:"owner_name"`
	Company   *Company `json:"company"`
	Contact   *Contact `json:"contact"`
	Quote     *Quote   `json:"quote"`
}

// Deal is the deal of a contract.
type Deal struct {
	ID                int64   `json:"id"`
	Title             string  `json:"title"`
	Value             Amount  `json:"value"`
	Currency          string  `json:"currency"`
	StageName         string  `json:"stage_name"`
	Status            string  `json:"status"`
	CompanyID         *int64  `json:"company_id"`
	CompanyName       *string `json:"company_name"`
	ContactID         *int64  `json:"contact_id"`
	ExpectedCloseDate *string `json:"expected_close_date"`
}

// Company is the licensee organisation.
type Company struct {
	ID             int64   `json:"id"`
	Name           string  `json:"name"`
	Domain         *string `json:"domain"`
	Website        *string `json:"website"`
	Phone          *string `json:"phone"`
	Industry       *string `json:"industry"`
	AddressStreet  *string `json:"address_street"`
	AddressCity    *string `json:"address_city"`
	AddressState   *string `json:"address_state"`
	AddressZip     *string `json:"address_zip"`
	AddressCountry *string `json:"address_country"`
}

// Contact is the licensee's signatory: the deal's contact, else the
// company's primary contact.
type Contact struct {
	ID        int64   `json:"id"`
	FirstName string  `json:"first_name"`
	LastName  string  `json:"last_name"`
	Email     *string `json:"email"`
	Phone     *string `json:"phone"`
	Mobile    *string `json:"mobile"`
	JobTitle  *string `json:"job_title"`
}

// Quote is the deal's accepted quote, else its newest.
type Quote struct {
	ID          int64               `json:"id"`
	QuoteNumber string              `json:"quote_number"`
	Status      string              `json:"status"`
	Currency    string              `json:"currency"`
	ValidUntil  *string             `json:"valid_until"`
	LineItems   []LineItem          `json:"line_items"`
	Subtotal    Amount              `json:"subtotal"`
	TaxRate     decimal.NullDecimal `json:"tax_rate"`
	Tax         Amount              `json:"tax"`
	Total       Amount              `json:"total"`
}

// LineItem is one line of a quote. Amount is deals' quantity × unit
// price rounded to the currency's minor unit; it is printed as sent and
// never recomputed here.
type LineItem struct {
	Description string              `json:"description"`
	Quantity    decimal.NullDecimal `json:"quantity"`
	UnitPrice   Amount              `json:"unit_price"`
	Amount      Amount              `json:"amount"`
}

// Amount is a money amount exactly as deals wrote it: a plain decimal
// string (a deal value with 2 places, "1200.00" JPY; quote money with the
// currency's minor digits, "452" JPY, "2.698" KWD). The text is kept and printed as is, with thousands
// separators added, so a contract shows the amounts deals computed and
// stored, never a re-rounded or recomputed one. A JSON number is accepted
// as its literal text; null or "" is no value. Anything else (exponents,
// signs other than a leading "-", separators) is refused, which makes the
// whole merge answer unreadable (502) rather than a contract with a
// guessed amount.
type Amount struct {
	Text  string
	Valid bool
}

// plainDecimal is the only amount form deals writes.
var plainDecimal = regexp.MustCompile(`^-?[0-9]+(\.[0-9]+)?$`)

// parseAmount is an Amount holding text, which must be a plain decimal.
func parseAmount(text string) (Amount, error) {
	text = strings.TrimSpace(text)
	if text == "" {
		return Amount{}, nil
	}
	if !plainDecimal.MatchString(text) {
		return Amount{}, fmt.Errorf("amount %q is not a plain decimal", text)
	}
	return Amount{Text: text, Valid: true}, nil
}

// UnmarshalJSON reads a string or a number literal, keeping its text.
func (a *Amount) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if bytes.Equal(b, []byte("null")) {
		*a = Amount{}
		return nil
	}
	text := string(b)
	if len(b) > 0 && b[0] == '"' {
		if err := json.Unmarshal(b, &text); err != nil {
			return err
		}
	}
	v, err := parseAmount(text)
	if err != nil {
		return err
	}
	*a = v
	return nil
}

// ContractValues are the contract's own fields offered to the Contract group.
type ContractValues struct {
	Number          string
	Title           string
	StartDate       string
	EndDate         string
	EffectiveDate   string
	TerminationDate string
	TermMonths      int
	AutoRenew       bool
	PartnerRef      string
	// Today is the generation date (YYYY-MM-DD).
	Today string
}

// Values is everything one resolution reads.
type Values struct {
	Merge    MergeData
	Contract ContractValues
}
