package api

import (
	"encoding/json"
	"regexp"
	"strings"

	"github.com/shopspring/decimal"

	"github.com/opencrm/crm/pkg/contract/leadsapi"
	"github.com/opencrm/crm/pkg/problem"
	"github.com/opencrm/crm/services/leads/internal/leads"
)

// qualifyInput reads the body of leadsapi.QualifyLead into the core's
// input: deal_value, a decimal string or a JSON number (decoded as its
// literal, httpx.Decode keeps numbers as json.Number), becomes a decimal,
// never a float.
func qualifyInput(b leadsapi.QualifyInput) (leads.QualifyInput, error) {
	in := leads.QualifyInput{CreateCompany: b.CreateCompany, CreateDeal: b.CreateDeal, DealName: b.DealName,
		DealStageID: b.DealStageID, ContactID: b.ContactID, CompanyID: b.CompanyID}
	if b.DealValue != nil {
		d, err := amount(b.DealValue)
		if err != nil {
			return leads.QualifyInput{}, err
		}
		in.DealValue = &d
	}
	return in, nil
}

var amountText = regexp.MustCompile(`^-?[0-9]{1,30}(\.[0-9]{1,30})?$`)

// amount accepts 1500, 1500.5 or "1500.50"; anything else is a 422 on
// deal_value rather than a malformed body.
func amount(v any) (decimal.Decimal, error) {
	notDecimal := problem.Invalid("deal_value", "must be a decimal number")
	var text string
	switch v := v.(type) {
	case json.Number:
		text = v.String()
	case string:
		text = strings.TrimSpace(v)
	default:
		return decimal.Decimal{}, notDecimal
	}
	if !amountText.MatchString(text) {
		return decimal.Decimal{}, notDecimal
	}
	d, err := decimal.NewFromString(text)
	if err != nil {
		return decimal.Decimal{}, notDecimal
	}
	return d, nil
}
