package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/jackc/pgx/v5"

	"github.com/opencrm/crm/pkg/activity"
	"github.com/opencrm/crm/pkg/audit"
	"github.com/opencrm/crm/pkg/contract/contractsapi"
	"github.com/opencrm/crm/pkg/contract/identityapi"
	"github.com/opencrm/crm/pkg/contract/privacyapi"
	"github.com/opencrm/crm/pkg/db"
	"github.com/opencrm/crm/pkg/history"
	"github.com/opencrm/crm/pkg/outbox"
	"github.com/opencrm/crm/pkg/timestamp"
	"github.com/opencrm/crm/services/contracts/internal/contracts"
)

// Privacy is contracts' part of a person's privacy requests (pkg/privacy's
// Part): the contracts of the deals the person's contacts were party to
// (the subject's DealIDs, which deals found). A contract's content merged
// the person's data (their name, e-mail, address) when it was generated.
//
// An erasure deletes every such contract that has no signed copy, with its
// notes and tasks, and redacts their history (a draft can be generated
// again from its template); it keeps an executed contract (one with a
// signed copy), a legal record the business must retain
// (privacyapi.KeptExecutedContract). Contracts keeps no rendered file: a
// PDF or DOCX is rendered on request, and the render worker's result,
// stored under the hash of what was rendered, expires by itself
// (RENDER_RESULT_TTL) and no route reaches it once the contract is gone.
type Privacy struct {
	db *db.DB
}

// NewPrivacy returns contracts' privacy part on d.
func NewPrivacy(d *db.DB) (*Privacy, error) {
	if d == nil {
		return nil, errors.New("store: privacy needs a database")
	}
	return &Privacy{db: d}, nil
}

// ContractRef is a contract as a person's export lists it: what
// identifies it and whether it was signed, not its content.
type ContractRef struct {
	ID             int64            `json:"id"`
	ContractNumber string           `json:"contract_number"`
	Title          string           `json:"title"`
	Status         contracts.Status `json:"status"`
	DealID         int64            `json:"deal_id"`
	Executed       bool             `json:"executed"`
	CreatedAt      timestamp.Time   `json:"created_at"`
}

// Export lists the contracts of the subject's deals as references
// ({"contracts":[...]}).
func (p *Privacy) Export(ctx context.Context, s privacyapi.Subject) (privacyapi.ExportPart, error) {
	var part privacyapi.ExportPart
	refs := []ContractRef{}
	if len(s.DealIDs) > 0 {
		rows, err := p.db.Query(ctx, `SELECT c.id, c.contract_number, c.title, c.status, c.deal_id,
				EXISTS (SELECT 1 FROM executed_files f WHERE f.contract_id = c.id), c.created_at
			FROM contracts c WHERE c.deal_id = ANY($1) ORDER BY c.id`, s.DealIDs)
		if err != nil {
			return part, fmt.Errorf("privacy: export contracts: %w", err)
		}
		refs, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (ContractRef, error) {
			var r ContractRef
			err := row.Scan(&r.ID, &r.ContractNumber, &r.Title, &r.Status, &r.DealID, &r.Executed, &r.CreatedAt.Time)
			return r, err
		})
		if err != nil {
			return part, fmt.Errorf("privacy: export contracts: %w", err)
		}
	}
	data, err := json.Marshal(map[string][]ContractRef{"contracts": refs})
	if err != nil {
		return part, fmt.Errorf("privacy: export contracts: %w", err)
	}
	part.Data = data
	return part, nil
}

// Erase deletes, in tx, the subject's deals' contracts that have no
// signed copy, with their notes and tasks (Erased {"contracts", "notes",
// "tasks"}), each publishing contract.deleted with its id alone and the
// audit log's record.deleted, as a delete does; then it redacts their
// history, the deletions' entries included (Redacted {"history"}). The
// contracts with a signed copy are kept, each in the receipt's Kept.
//
// The contracts are locked first, the lock an upload of a signed copy
// takes, and their copies are looked for by a later statement, so a copy
// uploaded meanwhile is seen (DeleteContract's reasoning).
func (p *Privacy) Erase(ctx context.Context, tx pgx.Tx, s privacyapi.Subject) (privacyapi.ErasePart, error) {
	part := privacyapi.ErasePart{Receipt: privacyapi.Receipt{
		Erased:   map[string]int64{"contracts": 0, "notes": 0, "tasks": 0},
		Redacted: map[string]int64{"history": 0},
		Kept:     []privacyapi.Kept{},
	}}
	if len(s.DealIDs) == 0 {
		return part, nil
	}
	ids, err := collectIDs(tx.Query(ctx, `SELECT id FROM contracts WHERE deal_id = ANY($1) ORDER BY id FOR UPDATE`, s.DealIDs))
	if err != nil {
		return part, fmt.Errorf("privacy: lock contracts: %w", err)
	}
	if len(ids) == 0 {
		return part, nil
	}
	signed, err := collectIDs(tx.Query(ctx, `SELECT contract_id FROM executed_files WHERE contract_id = ANY($1)
		ORDER BY contract_id`, ids))
	if err != nil {
		return part, fmt.Errorf("privacy: find signed copies: %w", err)
	}
	for _, id := range signed {
		part.Receipt.Kept = append(part.Receipt.Kept, privacyapi.Kept{Object: "contract", ID: id, Reason: privacyapi.KeptExecutedContract})
	}
	gone := slices.DeleteFunc(ids, func(id int64) bool { _, ok := slices.BinarySearch(signed, id); return ok })
	if len(gone) == 0 {
		return part, nil
	}
	tag, err := tx.Exec(ctx, `DELETE FROM contracts WHERE id = ANY($1)`, gone)
	if err != nil {
		return part, fmt.Errorf("privacy: delete contracts: %w", err)
	}
	part.Receipt.Erased["contracts"] = tag.RowsAffected()
	notes, err := tx.Exec(ctx, `DELETE FROM notes WHERE parent_type = $1 AND parent_id = ANY($2)`, activity.Contract, gone)
	if err != nil {
		return part, fmt.Errorf("privacy: delete contracts' notes: %w", err)
	}
	tasks, err := tx.Exec(ctx, `DELETE FROM tasks WHERE parent_type = $1 AND parent_id = ANY($2)`, activity.Contract, gone)
	if err != nil {
		return part, fmt.Errorf("privacy: delete contracts' tasks: %w", err)
	}
	part.Receipt.Erased["notes"], part.Receipt.Erased["tasks"] = notes.RowsAffected(), tasks.RowsAffected()
	recs := make([]outbox.Record, 0, len(gone))
	for _, id := range gone {
		recs = append(recs, outbox.Record{Type: contracts.EventDeleted, AggregateID: strconv.FormatInt(id, 10), Data: outbox.Tombstone(id)})
	}
	if err := addEvents(ctx, tx, recs); err != nil {
		return part, err
	}
	for _, id := range gone {
		if err := audit.Record(ctx, tx, contractsapi.Service, audit.Entry{Action: identityapi.AuditRecordDeleted,
			Object: "contract", ID: strconv.FormatInt(id, 10), Details: map[string]string{"object": "contract"}}); err != nil {
			return part, err
		}
	}
	// After the deletions, whose own entries hold the contracts' last
	// values: they are redacted too.
	n, err := history.Redact(ctx, tx, "contract", gone)
	if err != nil {
		return part, err
	}
	part.Receipt.Redacted["history"] = n
	return part, nil
}

// collectIDs reads a query's single bigint column.
func collectIDs(rows pgx.Rows, err error) ([]int64, error) {
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[int64])
}
