package store

import (
	"encoding/json"
	"fmt"

	"github.com/opencrm/crm/pkg/fault"
	"github.com/opencrm/crm/services/intake/internal/intake"
)

// storedReceipt is an intake.Receipt as a done key's receipt_ columns hold
// it: the lead, the queued submission, or leads' refusal (JSON, with its
// kind by name, which stays put where fault.Kind's number need not).
type storedReceipt struct {
	LeadID   *int64
	QueuedID *int64
	Refusal  *storedRefusal
}

type storedRefusal struct {
	Kind   string         `json:"kind"`
	Code   string         `json:"code"`
	Detail string         `json:"detail,omitempty"`
	Fields []fault.Field  `json:"fields,omitempty"`
	Extra  map[string]any `json:"extra,omitempty"`
}

// completeIdemArgs are completeIdemSQL's arguments for idem's receipt r.
func completeIdemArgs(idem intake.Idem, r intake.Receipt) []any {
	var lead, queued *int64
	if r.Refusal == nil && r.QueuedID == 0 {
		lead = &r.LeadID
	}
	if r.QueuedID != 0 {
		queued = &r.QueuedID
	}
	var refusal *storedRefusal
	if f := r.Refusal; f != nil {
		refusal = &storedRefusal{Kind: f.Kind.String(), Code: f.Code, Detail: f.Detail, Fields: f.Fields, Extra: f.Extra}
	}
	return []any{idem.APIKeyID, idem.Key, lead, queued, refusal}
}

// receipt is the done key's receipt: its receipt_ columns, or for a row
// written before they existed, the answer stored then (legacyReceipt).
func (sr storedReceipt) receipt(status *int, response []byte) (intake.Receipt, error) {
	switch {
	case sr.LeadID != nil:
		return intake.Receipt{LeadID: *sr.LeadID}, nil
	case sr.QueuedID != nil:
		return intake.Receipt{QueuedID: *sr.QueuedID}, nil
	case sr.Refusal != nil:
		kind, ok := kindNamed(sr.Refusal.Kind)
		if !ok {
			return intake.Receipt{}, fmt.Errorf("read receipt: unknown refusal kind %q", sr.Refusal.Kind)
		}
		f := sr.Refusal
		return intake.Receipt{Refusal: &fault.Error{Kind: kind, Code: f.Code, Detail: f.Detail, Fields: f.Fields, Extra: f.Extra}}, nil
	case status != nil:
		return legacyReceipt(*status, response)
	}
	return intake.Receipt{}, fmt.Errorf("read receipt: a done key without one")
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
// receipt_ columns could carry, by their status (the four leads passes on).
var legacyRefusals = map[int]fault.Kind{
	400: fault.KindMalformed,
	404: fault.KindNotFound,
	409: fault.KindConflict,
	422: fault.KindInvalid,
}

// legacyReceipt reads the answer a row written before the receipt_ columns
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
