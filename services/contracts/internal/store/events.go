package store

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5"

	"github.com/opencrm/crm/pkg/contract/contractsapi"
	"github.com/opencrm/crm/pkg/outbox"
	"github.com/opencrm/crm/pkg/timestamp"
	"github.com/opencrm/crm/services/contracts/internal/contracts"
)

// Stream is where contract events go.
var Stream = outbox.Stream("contracts")

// record is one event about c, whose data is c as contractsapi.GetContract
// answers it: the store reads the same record for both.
func record(typ string, c contracts.Contract) outbox.Record {
	return outbox.Record{Type: typ, AggregateID: strconv.FormatInt(c.ID, 10), Data: c.Contract}
}

// snapshot is what a write may change of a contract, taken before the
// write so its events can be chosen by comparing: the status apart, the
// rest (every field of the record but updated_at, plus the stored header
// and footer cells a regeneration rewrites) as one encoding.
type snapshot struct {
	status contracts.Status
	rest   []byte
}

func snap(c contracts.Contract) (snapshot, error) {
	status := c.Status
	c.Status, c.UpdatedAt = "", timestamp.Time{}
	rest, err := json.Marshal(struct {
		C              contractsapi.Contract
		Header, Footer [3]string
	}{c.Contract, c.Header, c.Footer})
	if err != nil {
		return snapshot{}, fmt.Errorf("contract snapshot: %w", err)
	}
	return snapshot{status: status, rest: rest}, nil
}

// changeEvents chooses the events of a write (a PUT, a regeneration, the
// removal of the signed copy, a renewal or expiry) that turned before into
// after: contract.status_changed when the status moved, then
// contract.updated unless the status is all that moved. A write that
// changes nothing but updated_at is still an update, as in the other
// contexts.
func changeEvents(before snapshot, after contracts.Contract) ([]outbox.Record, error) {
	now, err := snap(after)
	if err != nil {
		return nil, err
	}
	var recs []outbox.Record
	moved := after.Status != before.status
	if moved {
		recs = append(recs, record(contracts.EventStatusChanged, after))
	}
	if !moved || !bytes.Equal(now.rest, before.rest) {
		recs = append(recs, record(contracts.EventUpdated, after))
	}
	return recs, nil
}

// signedEvents chooses the events of a signed copy's upload:
// contract.status_changed when the upload moved the status (draft or
// active to executed), then contract.executed. The new executed_file is
// what contract.executed announces, so no contract.updated repeats it.
func signedEvents(before snapshot, after contracts.Contract) ([]outbox.Record, error) {
	var recs []outbox.Record
	if after.Status != before.status {
		recs = append(recs, record(contracts.EventStatusChanged, after))
	}
	return append(recs, record(contracts.EventExecuted, after)), nil
}

// addEvents records recs in tx, in order.
func addEvents(ctx context.Context, tx pgx.Tx, recs []outbox.Record) error {
	return outbox.AddMany(ctx, tx, Stream, recs)
}
