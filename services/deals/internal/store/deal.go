package store

import (
	"context"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/opencrm/crm/pkg/audit"
	"github.com/opencrm/crm/pkg/contract/dealsapi"
	"github.com/opencrm/crm/pkg/contract/identityapi"
	"github.com/opencrm/crm/pkg/contract/propertyapi"
	"github.com/opencrm/crm/pkg/customfield"
	"github.com/opencrm/crm/pkg/db"
	"github.com/opencrm/crm/pkg/directory"
	"github.com/opencrm/crm/pkg/fault"
	"github.com/opencrm/crm/pkg/idempotency"
	"github.com/opencrm/crm/pkg/list/listsql"
	"github.com/opencrm/crm/pkg/outbox"
	"github.com/opencrm/crm/services/deals/internal/deals"
)

const dealSelect = `SELECT d.id, d.title, d.value::text, d.currency, d.stage_id, s.name, d.status,
	d.company_id, d.company_name, d.contact_id, to_char(d.expected_close_date, 'YYYY-MM-DD'),
	d.assigned_to, u.name, d.source_lead_id, d.created_at, d.updated_at, d.company_updated_at, d.custom_fields
	FROM deals d JOIN deal_stages s ON s.id = d.stage_id
	LEFT JOIN directory_users u ON u.id = d.assigned_to `

// scanDeal reads one row of dealSelect: Held is the custom field values
// the deal stores, which a read renders with the definitions (render).
func scanDeal(row pgx.CollectableRow) (deals.Deal, error) {
	var d deals.Deal
	var value string
	err := row.Scan(&d.ID, &d.Title, &value, &d.Currency, &d.StageID, &d.StageName, &d.Status,
		&d.CompanyID, &d.CompanyName, &d.ContactID, &d.ExpectedCloseDate,
		&d.AssignedTo, &d.AssignedToName, &d.SourceLeadID, &d.CreatedAt, &d.UpdatedAt, &d.CompanyUpdatedAt, &d.Held)
	if err != nil {
		return d, err
	}
	amount, err := dec(value)
	d.Value = deals.NewDealValue(amount)
	return d, err
}

// dealSorts maps each of deals.DealSorts to its column.
var dealSorts = listsql.Sorts{
	By: map[string]string{
		"title":               "lower(d.title)",
		"value":               "d.value",
		"stage":               "s.position",
		"expected_close_date": "d.expected_close_date",
		"created_at":          "d.created_at",
		"updated_at":          "d.updated_at",
	},
	TieBreak: "d.id",
	Updated:  "d.updated_at",
}

// custom is the column of the deals' custom field values.
const custom = customfield.Column("d.custom_fields")

// ListDeals returns one page and the total matching.
func (s *Store) ListDeals(ctx context.Context, f deals.DealFilter) ([]deals.Deal, int, error) {
	var w listsql.Where
	custom.Where(&w, f.Custom.Filters)
	if f.Search != "" {
		p := w.Arg("%" + listsql.EscapeLike(f.Search) + "%")
		w.And("(lower(d.title) LIKE lower(" + p + ") OR lower(d.company_name) LIKE lower(" + p + "))")
	}
	eq := func(col string, v *int64) {
		if v != nil {
			w.And(col + " = " + w.Arg(*v))
		}
	}
	eq("d.stage_id", f.StageID)
	eq("d.company_id", f.CompanyID)
	eq("d.contact_id", f.ContactID)
	eq("d.assigned_to", f.AssignedTo)
	if len(f.Statuses) > 0 {
		w.And("d.status = ANY(" + w.Arg(f.Statuses) + ")")
	}
	if f.AssignedToAny != nil {
		w.And("d.assigned_to = ANY(" + w.Arg(f.AssignedToAny) + ")")
	}
	if f.DateFrom != nil {
		w.And("d.created_at >= " + w.Arg(*f.DateFrom))
	}
	if f.DateTo != nil {
		w.And("d.created_at < " + w.Arg(*f.DateTo))
	}
	dealSorts.Since(&w, f.Query)
	var total int
	if err := s.db.QueryRow(ctx, `SELECT count(*) FROM deals d `+w.SQL(), w.Args()...).Scan(&total); err != nil {
		return nil, 0, err
	}
	where := w.SQL()
	limit := listsql.LimitOffset(&w, f.Query)
	order := custom.Sorts(dealSorts, f.Custom.Sort).OrderBy(f.Query)
	rows, err := s.db.Query(ctx, dealSelect+where+" "+order+" "+limit, w.Args()...)
	if err != nil {
		return nil, 0, err
	}
	items, err := pgx.CollectRows(rows, scanDeal)
	if err != nil {
		return nil, 0, err
	}
	defs, err := definitions(ctx, s.db)
	if err != nil {
		return nil, 0, err
	}
	for i := range items {
		render(defs, &items[i])
	}
	return items, total, nil
}

// getDeal reads a deal with its custom fields rendered.
func getDeal(ctx context.Context, q db.Querier, id int64) (deals.Deal, error) {
	rows, err := q.Query(ctx, dealSelect+`WHERE d.id = $1`, id)
	d, err := one(rows, err, scanDeal, "deal")
	if err != nil {
		return d, err
	}
	defs, err := definitions(ctx, q)
	if err != nil {
		return deals.Deal{}, err
	}
	render(defs, &d)
	return d, nil
}

// lockedDeal locks a deal's row until the transaction ends and reads it.
// Two statements on purpose: a joined SELECT … FOR UPDATE OF d that waits
// for a concurrent move to another stage rechecks the join against the
// stage row it read before waiting, and finds no row.
func lockedDeal(ctx context.Context, tx pgx.Tx, id int64) (deals.Deal, error) {
	if err := lockDeal(ctx, tx, id); err != nil {
		return deals.Deal{}, err
	}
	return getDeal(ctx, tx, id)
}

// GetDeal returns one deal, or a not-found fault.
func (s *Store) GetDeal(ctx context.Context, id int64) (deals.Deal, error) {
	return getDeal(ctx, s.db, id)
}

// stageOutcome reads the stage's outcome and holds it (FOR SHARE) so it
// cannot be deleted or change outcome before the deal commits.
func stageOutcome(ctx context.Context, tx pgx.Tx, id int64) (string, error) {
	var outcome string
	err := tx.QueryRow(ctx, `SELECT outcome FROM deal_stages WHERE id = $1 FOR SHARE`, id).Scan(&outcome)
	if db.IsNoRows(err) {
		return "", fault.Invalid("stage_id", "does not exist")
	}
	return outcome, err
}

// insertDeal inserts a deal, claims its unique values and records
// deal.created; defs are the definitions the transaction holds.
func insertDeal(ctx context.Context, tx pgx.Tx, defs []customfield.Definition, r deals.DealRecord) (deals.Deal, error) {
	if err := customfield.Recheck(ctx, defs, nil, held(r)); err != nil {
		return deals.Deal{}, err
	}
	status, err := stageOutcome(ctx, tx, r.StageID)
	if err != nil {
		return deals.Deal{}, err
	}
	var id int64
	err = tx.QueryRow(ctx, `INSERT INTO deals (title, value, currency, stage_id, status, company_id, company_name,
			company_updated_at, contact_id, expected_close_date, assigned_to, source_lead_id, created_by, custom_fields)
		VALUES ($1, $2::numeric, $3, $4, $5, $6, $7, $8, $9, $10::date, $11, $12, $13, $14) RETURNING id`,
		r.Title, r.Value.String(), r.Currency, r.StageID, status, r.CompanyID, r.CompanyName, r.CompanyUpdatedAt,
		r.ContactID, r.ExpectedCloseDate, r.AssignedTo, r.SourceLeadID, directory.Caller(ctx), held(r)).Scan(&id)
	if err != nil {
		return deals.Deal{}, err
	}
	return written(ctx, tx, defs, id, r, deals.EventDealCreated)
}

// CreateDeal inserts a deal and its deal.created event.
func (s *Store) CreateDeal(ctx context.Context, rec deals.DealRecord) (deals.Deal, error) {
	var d deals.Deal
	err := s.db.InTx(ctx, func(tx pgx.Tx) error {
		defs, err := hold(ctx, tx)
		if err != nil {
			return err
		}
		d, err = insertDeal(ctx, tx, defs, rec)
		return err
	})
	return d, err
}

// CreateDealOnce is CreateDeal guarded by an idempotency key: the deal is
// stored with the key as it was sent, so a retry gets it back as it was
// created.
func (s *Store) CreateDealOnce(ctx context.Context, key string, request any, rec deals.DealRecord) (idempotency.Done[dealsapi.Deal], error) {
	return idempotency.Once(ctx, s.db, key, request, func(tx pgx.Tx) (dealsapi.Deal, error) {
		defs, err := hold(ctx, tx)
		if err != nil {
			return dealsapi.Deal{}, err
		}
		d, err := insertDeal(ctx, tx, defs, rec)
		return d.Public(), err
	})
}

// UpdateDeal locks the deal, lets apply turn it into the record to store
// and writes every field of that; status follows the stage.
func (s *Store) UpdateDeal(ctx context.Context, id int64, apply func(deals.Deal) (deals.DealRecord, error)) (deals.Deal, error) {
	var d deals.Deal
	err := s.db.InTx(ctx, func(tx pgx.Tx) error {
		defs, err := hold(ctx, tx)
		if err != nil {
			return err
		}
		cur, err := lockedDeal(ctx, tx, id)
		if err != nil {
			return err
		}
		r, err := apply(cur)
		if err != nil {
			return err
		}
		d, err = saveDeal(ctx, tx, defs, cur, r)
		return err
	})
	return d, err
}

// saveDeal writes every field of the record of cur, a locked deal (status
// follows the stage), claims its unique values and records deal.updated;
// defs are the definitions the transaction holds.
func saveDeal(ctx context.Context, tx pgx.Tx, defs []customfield.Definition, cur deals.Deal, r deals.DealRecord) (deals.Deal, error) {
	if err := customfield.Recheck(ctx, defs, cur.Held, held(r)); err != nil {
		return deals.Deal{}, err
	}
	id := cur.ID
	status, err := stageOutcome(ctx, tx, r.StageID)
	if err != nil {
		return deals.Deal{}, err
	}
	_, err = tx.Exec(ctx, `UPDATE deals SET title = $2, value = $3::numeric, currency = $4, stage_id = $5,
			status = $6, company_id = $7, company_name = $8, company_updated_at = $9, contact_id = $10,
			expected_close_date = $11::date, assigned_to = $12, source_lead_id = $13, custom_fields = $14,
			updated_at = now()
		WHERE id = $1`,
		id, r.Title, r.Value.String(), r.Currency, r.StageID, status, r.CompanyID, r.CompanyName, r.CompanyUpdatedAt,
		r.ContactID, r.ExpectedCloseDate, r.AssignedTo, r.SourceLeadID, held(r))
	if err != nil {
		return deals.Deal{}, err
	}
	return written(ctx, tx, defs, id, r, deals.EventDealUpdated)
}

// written finishes a deal's insert or save: claims its unique values,
// reads it back rendered and records event with its public form.
func written(ctx context.Context, tx pgx.Tx, defs []customfield.Definition, id int64, r deals.DealRecord, event string) (deals.Deal, error) {
	if err := claim(ctx, tx, defs, id, r); err != nil {
		return deals.Deal{}, err
	}
	d, err := getDeal(ctx, tx, id)
	if err != nil {
		return deals.Deal{}, err
	}
	return d, outbox.Add(ctx, tx, Stream, event, strconv.FormatInt(id, 10), d.Public())
}

// DeleteDeal deletes a deal (quotes cascade) and publishes deal.deleted.
// It holds the definitions first, as every write does: a definition's
// deletion drops unique values and then strips deals, the other order
// from this one's.
func (s *Store) DeleteDeal(ctx context.Context, id int64) error {
	return s.db.InTx(ctx, func(tx pgx.Tx) error {
		if _, err := hold(ctx, tx); err != nil {
			return err
		}
		return removeDeal(ctx, tx, id)
	})
}

// removeDeal deletes a deal (quotes cascade) with its unique values and
// records deal.deleted and, in the same transaction, the audit log's
// record.deleted (a single delete and each deal of a batch delete).
func removeDeal(ctx context.Context, tx pgx.Tx, id int64) error {
	var gone int64
	err := tx.QueryRow(ctx, `DELETE FROM deals WHERE id = $1 RETURNING id`, id).Scan(&gone)
	if db.IsNoRows(err) {
		return fault.NotFound("deal")
	}
	if err != nil {
		return err
	}
	if err := customfield.Release(ctx, tx, propertyapi.Deals, id); err != nil {
		return err
	}
	if err := outbox.Add(ctx, tx, Stream, deals.EventDealDeleted, strconv.FormatInt(id, 10), outbox.Tombstone(gone)); err != nil {
		return err
	}
	return auditDeleted(ctx, tx, "deal", gone)
}

// auditDeleted records the audit log's record.deleted of object id in
// tx, the deletion's transaction.
func auditDeleted(ctx context.Context, tx pgx.Tx, object string, id int64) error {
	return audit.Record(ctx, tx, dealsapi.Service, audit.Entry{Action: identityapi.AuditRecordDeleted,
		Object: object, ID: strconv.FormatInt(id, 10), Details: map[string]string{"object": object}})
}

// RefreshCompany keeps the denormalised company name current (fed by
// contacts' company.created/updated events): version is the company's
// updated_at, and a deal whose name comes from a newer (or the same)
// version keeps it, so redelivered and reordered events never roll a name
// back. It reports how many deals changed. A deal whose shown name changes
// is updated (updated_at moves) so an incremental sync sees the new name;
// a version bump that leaves the name as it was does not touch it.
func (s *Store) RefreshCompany(ctx context.Context, companyID int64, name string, version time.Time) (int64, error) {
	tag, err := s.db.Exec(ctx, `UPDATE deals SET company_name = $2, company_updated_at = $3,
			updated_at = CASE WHEN company_name IS DISTINCT FROM $2 THEN now() ELSE updated_at END
		WHERE company_id = $1 AND (company_updated_at IS NULL OR company_updated_at < $3)`,
		companyID, name, version)
	return tag.RowsAffected(), err
}
