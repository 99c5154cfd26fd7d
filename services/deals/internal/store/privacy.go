package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/jackc/pgx/v5"

	"github.com/opencrm/crm/pkg/contract/privacyapi"
	"github.com/opencrm/crm/pkg/db"
	"github.com/opencrm/crm/pkg/outbox"
	"github.com/opencrm/crm/pkg/timestamp"
	"github.com/opencrm/crm/services/deals/internal/deals"
)

// Privacy is deals' part of a person's privacy requests (pkg/privacy's
// Part): the deals one of the person's contacts was party to. A deal is
// the business's record, not the person's: an export lists those deals
// as references, and an erasure unlinks the contact (contact_id = NULL)
// and keeps the deal. Deals' history holds the contact only as its id.
type Privacy struct {
	db *db.DB
}

// NewPrivacy returns deals' privacy part on d.
func NewPrivacy(d *db.DB) (*Privacy, error) {
	if d == nil {
		return nil, errors.New("store: privacy needs a database")
	}
	return &Privacy{db: d}, nil
}

// DealRef is a deal as a person's export lists it: what identifies it,
// not the business's figures beyond its value.
type DealRef struct {
	ID        int64          `json:"id"`
	Title     string         `json:"title"`
	Stage     string         `json:"stage"`
	Value     string         `json:"value"`
	Currency  string         `json:"currency"`
	Status    string         `json:"status"`
	CompanyID *int64         `json:"company_id"`
	CreatedAt timestamp.Time `json:"created_at"`
}

// Export lists the deals of the subject's contacts as references
// ({"deals":[...]}) and answers their ids for contracts.
func (p *Privacy) Export(ctx context.Context, s privacyapi.Subject) (privacyapi.ExportPart, error) {
	var part privacyapi.ExportPart
	refs := []DealRef{}
	if len(s.ContactIDs) > 0 {
		rows, err := p.db.Query(ctx, dealSelect+`WHERE d.contact_id = ANY($1) ORDER BY d.id`, s.ContactIDs)
		if err != nil {
			return part, fmt.Errorf("privacy: export deals: %w", err)
		}
		list, err := pgx.CollectRows(rows, scanDeal)
		if err != nil {
			return part, fmt.Errorf("privacy: export deals: %w", err)
		}
		for _, d := range list {
			refs = append(refs, DealRef{ID: d.ID, Title: d.Title, Stage: d.StageName, Value: d.Value.String(),
				Currency: d.Currency, Status: d.Status, CompanyID: d.CompanyID, CreatedAt: d.CreatedAt})
			part.DealIDs = append(part.DealIDs, d.ID)
		}
	}
	data, err := json.Marshal(map[string][]DealRef{"deals": refs})
	if err != nil {
		return part, fmt.Errorf("privacy: export deals: %w", err)
	}
	part.Data = data
	return part, nil
}

// Erase unlinks the subject's contacts from their deals in tx
// (Redacted {"deals": n}); the change is recorded in history as the
// erasure's, and each deal's deal.updated (its public form, which names
// no person) tells the other contexts the contact is gone. It answers the
// deals' ids: contracts erases the drafts made for them.
func (p *Privacy) Erase(ctx context.Context, tx pgx.Tx, s privacyapi.Subject) (privacyapi.ErasePart, error) {
	part := privacyapi.ErasePart{Receipt: privacyapi.Receipt{Redacted: map[string]int64{"deals": 0}}}
	if len(s.ContactIDs) == 0 {
		return part, nil
	}
	rows, err := tx.Query(ctx, `UPDATE deals SET contact_id = NULL, updated_at = now()
		WHERE contact_id = ANY($1) RETURNING id`, s.ContactIDs)
	if err != nil {
		return part, fmt.Errorf("privacy: unlink deals: %w", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return part, fmt.Errorf("privacy: unlink deals: %w", err)
	}
	slices.Sort(ids)
	recs := make([]outbox.Record, 0, len(ids))
	for _, id := range ids {
		d, err := getDeal(ctx, tx, id)
		if err != nil {
			return part, err
		}
		recs = append(recs, outbox.Record{Type: deals.EventDealUpdated, AggregateID: strconv.FormatInt(id, 10), Data: d.Public()})
	}
	if err := outbox.AddMany(ctx, tx, Stream, recs); err != nil {
		return part, err
	}
	part.DealIDs = ids
	part.Receipt.Redacted["deals"] = int64(len(ids))
	return part, nil
}
