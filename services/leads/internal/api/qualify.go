package api

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strings"

	"github.com/shopspring/decimal"

	"github.com/opencrm/crm/pkg/httpx"
	"github.com/opencrm/crm/services/leads/internal/leads"
)

// qualifyBody is the wire form of leadsapi.QualifyLead's body: the domain's
// QualifyInput with deal_value as the client may send it.
type qualifyBody struct {
	CreateCompany bool    `json:"create_company"`
	CreateDeal    bool    `json:"create_deal"`
	DealName      *string `json:"deal_name"`
	DealValue     *amount `json:"deal_value"`
	DealStageID   *int64  `json:"deal_stage_id"`
	ContactID     *int64  `json:"contact_id"`
	CompanyID     *int64  `json:"company_id"`
}

func (b qualifyBody) input() leads.QualifyInput {
	in := leads.QualifyInput{CreateCompany: b.CreateCompany, CreateDeal: b.CreateDeal, DealName: b.DealName,
		DealStageID: b.DealStageID, ContactID: b.ContactID, CompanyID: b.CompanyID}
	if b.DealValue != nil {
		d := b.DealValue.Decimal
		in.DealValue = &d
	}
	return in
}

// amount is a money amount given as a JSON number or a string holding one;
// it is kept as a decimal, never a float.
type amount struct{ decimal.Decimal }

var amountText = regexp.MustCompile(`^-?[0-9]{1,30}(\.[0-9]{1,30})?$`)

// UnmarshalJSON accepts 1500, 1500.5 or "1500.50"; anything else is a 422
// on deal_value rather than a malformed body.
func (a *amount) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	text := string(b)
	notDecimal := &httpx.FieldTypeError{Field: "deal_value", Message: "must be a decimal number"}
	if len(b) > 0 && b[0] == '"' {
		if err := json.Unmarshal(b, &text); err != nil {
			return notDecimal
		}
		text = strings.TrimSpace(text)
	}
	if !amountText.MatchString(text) {
		return notDecimal
	}
	d, err := decimal.NewFromString(text)
	if err != nil {
		return notDecimal
	}
	a.Decimal = d
	return nil
}
