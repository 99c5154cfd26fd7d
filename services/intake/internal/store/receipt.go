package store

import (
	"encoding/json"
	"fmt"

	"github.com/opencrm/crm/pkg/fault"
	"github.com/opencrm/crm/services/intake/internal/intake"
)

// storedReceipt is an intake.Receipt as the receipt column holds it. A
// refusal's kind is stored by name, which stays put where fault.Kind's
// number need not.
type storedReceipt struct {
	LeadID   int64          `json:"lead_id,omitempty"`
	QueuedID int64          `json:"queued_id,omitempty"`
	Refusal  *storedRefusal `json:"refusal,omitempty"`
}

type storedRefusal struct {
	Kind   string         `json:"kind"`
	Code   string         `json:"code"`
	Detail string         `json:"detail,omitempty"`
	Fields []fault.Field  `json:"fields,omitempty"`
	Extra  map[string]any `json:"extra,omitempty"`
}

func encodeReceipt(r intake.Receipt) ([]byte, error) {
	sr := storedReceipt{LeadID: r.LeadID, QueuedID: r.QueuedID}
	if f := r.Refusal; f != nil {
		sr.Refusal = &storedRefusal{Kind: f.Kind.String(), Code: f.Code, Detail: f.Detail, Fields: f.Fields, Extra: f.Extra}
	}
	raw, err := json.Marshal(sr)
	if err != nil {
		return nil, fmt.Errorf("encode receipt: %w", err)
	}
	return raw, nil
}

// readReceipt reads a done key's receipt: the receipt column, or for a
// row written before it existed, the answer stored then (see legacyReceipt).
func readReceipt(receipt []byte, status *int, response []byte) (intake.Receipt, error) {
	if receipt == nil {
		return legacyReceipt(*status, response)
	}
	var sr storedReceipt
	if err := json.Unmarshal(receipt, &sr); err != nil {
		return intake.Receipt{}, fmt.Errorf("read receipt: %w", err)
	}
	r := intake.Receipt{LeadID: sr.LeadID, QueuedID: sr.QueuedID}
	if f := sr.Refusal; f != nil {
		kind, ok := kindNamed(f.Kind)
		if !ok {
			return intake.Receipt{}, fmt.Errorf("read receipt: unknown refusal kind %q", f.Kind)
		}
		r.Refusal = &fault.Error{Kind: kind, Code: f.Code, Detail: f.Detail, Fields: f.Fields, Extra: f.Extra}
	}
	return r, nil
}

// kindNamed is the fault kind whose String is name.
func kindNamed(name string) (fault.Kind, bool) {
	for k := fault.KindInternal; k.String() != fmt.Sprintf("kind(%d)", k); k++ {
		if k.String() == name {
			return k, true
		}
	}
	return 0, false
}

// legacyRefusals are the kinds of the refusals an answer stored before the
// receipt column could carry, by their status (the four leads passes on).
var legacyRefusals = map[int]fault.Kind{
	400: fault.KindMalformed,
	404: fault.KindNotFound,
	409: fault.KindConflict,
	422: fault.KindInvalid,
}

// legacyReceipt reads the answer a row written before the receipt column
// holds (the expand step of migration 002; gone with the contract step):
// 201 {"data":{"id":lead}}, 202 {"data":{"submission_id":id}}, or leads'
// refusal as a problem body.
func legacyReceipt(status int, body []byte) (intake.Receipt, error) {
	var b struct {
		Data struct {
			ID           *int64 `json:"id"`
			SubmissionID int64  `json:"submission_id"`
		} `json:"data"`
		Code   string        `json:"code"`
		Detail string        `json:"detail"`
		Errors []fault.Field `json:"errors"`
	}
	if err := json.Unmarshal(body, &b); err != nil {
		return intake.Receipt{}, fmt.Errorf("read stored answer: %w", err)
	}
	switch kind, refused := legacyRefusals[status]; {
	case status == 201 && b.Data.ID != nil:
		return intake.Receipt{LeadID: *b.Data.ID}, nil
	case status == 202 && b.Data.SubmissionID > 0:
		return intake.Receipt{QueuedID: b.Data.SubmissionID}, nil
	case refused:
		f := fault.New(kind, b.Code, b.Detail)
		f.Fields = b.Errors
		return intake.Receipt{Refusal: f}, nil
	}
	return intake.Receipt{}, fmt.Errorf("read stored answer: status %d", status)
}
