package httpx_test

import (
	"bytes"
	"errors"
	"net/http/httptest"
	"testing"

	"github.com/shopspring/decimal"

	"github.com/opencrm/crm/pkg/httpx"
	"github.com/opencrm/crm/pkg/patch"
	"github.com/opencrm/crm/pkg/problem"
	"github.com/opencrm/crm/pkg/timestamp"
)

// writeBody has a field of every kind the write endpoints' request types
// use: plain and optional text, ids, money, patch fields, timestamps, lists
// and free-form objects.
type writeBody struct {
	Name      string                        `json:"name"`
	Email     *string                       `json:"email"`
	OwnerID   *int64                        `json:"owner_id"`
	Count     int                           `json:"count"`
	Amount    decimal.Decimal               `json:"amount"`
	Discount  decimal.NullDecimal           `json:"discount"`
	Phone     patch.Field[string]           `json:"phone"`
	CompanyID patch.Field[*int64]           `json:"company_id"`
	Value     patch.Field[*decimal.Decimal] `json:"value"`
	DueAt     *timestamp.Time               `json:"due_at"`
	Tags      []string                      `json:"tags"`
	Items     []struct {
		Quantity decimal.Decimal `json:"quantity"`
		Price    decimal.Decimal `json:"unit_price"`
	} `json:"line_items"`
	Custom map[string]any `json:"custom_fields"`
	Active *bool          `json:"active"`
}

// FuzzDecode runs arbitrary bodies through the JSON decoding of every write
// endpoint: it must never panic and must fail only with the documented
// client categories (400, 413, 415, 422), never a 500.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{
		`{"name":"a","amount":"12.50","discount":null,"phone":null,"company_id":3,"tags":["x"]}`,
		`{"amount":1e999999999,"count":1.5}`, `{"owner_id":"1"}`, `{"due_at":"2026-13-01T00:00:00Z"}`,
		`{"line_items":[{"quantity":"-0","unit_price":"NaN"}]}`, `{"value":"abc"}`, `{"custom_fields":{"a":[[[[]]]]}}`,
		`{"name":"\ud800"}`, `{} {}`, `[`, ``, `{"active":"yes"}`,
	} {
		f.Add("application/json", []byte(s))
	}
	f.Add("text/plain", []byte(`{}`))
	f.Add("application/merge-patch+json; charset=utf-8", []byte(`{"name":null}`))
	f.Fuzz(func(t *testing.T, contentType string, body []byte) {
		req := httptest.NewRequest("POST", "/x", bytes.NewReader(body))
		req.Header.Set("Content-Type", contentType)
		var dst writeBody
		err := httpx.Decode(httptest.NewRecorder(), req, &dst, 1024)
		if err == nil {
			return
		}
		var pe *problem.Error
		if !errors.As(err, &pe) {
			t.Fatalf("%q: %v is not a problem", body, err)
		}
		switch pe.Status {
		case 400, 413, 415, 422:
		default:
			t.Fatalf("%q: status %d (%v)", body, pe.Status, err)
		}
	})
}
