package store

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/opencrm/crm/pkg/activity"
	"github.com/opencrm/crm/pkg/audit"
	"github.com/opencrm/crm/pkg/contract/contractsapi"
	"github.com/opencrm/crm/pkg/contract/identityapi"
	"github.com/opencrm/crm/pkg/db"
	"github.com/opencrm/crm/pkg/directory"
	"github.com/opencrm/crm/pkg/fault"
	"github.com/opencrm/crm/pkg/list/listsql"
	"github.com/opencrm/crm/pkg/outbox"
	"github.com/opencrm/crm/pkg/timestamp"
	"github.com/opencrm/crm/services/contracts/internal/contracts"
)

const contractSelect = `SELECT c.id, c.contract_number, c.title, c.deal_id, c.deal_title, c.company_id,
	c.company_name, c.template_id, t.name, c.status, to_char(c.start_date, 'YYYY-MM-DD'),
	to_char(c.end_date, 'YYYY-MM-DD'), to_char(c.effective_date, 'YYYY-MM-DD'),
	to_char(c.termination_date, 'YYYY-MM-DD'), c.term_months, c.auto_renew, c.partner_ref, c.content,
	c.unresolved_tags, c.header_cells, c.footer_cells, c.created_by, c.created_at, c.updated_at,
	f.filename, f.size, f.sha256, f.uploaded_at
	FROM contracts c JOIN templates t ON t.id = c.template_id
	LEFT JOIN executed_files f ON f.contract_id = c.id`

func scanContract(row pgx.CollectableRow) (contracts.Contract, error) {
	var c contracts.Contract
	var header, footer []string
	var fname, fsha *string
	var fsize *int64
	var fat *time.Time
	err := row.Scan(&c.ID, &c.ContractNumber, &c.Title, &c.DealID, &c.DealTitle, &c.CompanyID,
		&c.CompanyName, &c.TemplateID, &c.TemplateName, &c.Status, &c.StartDate, &c.EndDate,
		&c.EffectiveDate, &c.TerminationDate, &c.TermMonths, &c.AutoRenew, &c.PartnerRef, &c.Content,
		&c.UnresolvedTags, &header, &footer, &c.CreatedBy, &c.CreatedAt.Time, &c.UpdatedAt.Time,
		&fname, &fsize, &fsha, &fat)
	if err != nil {
		return c, err
	}
	c.Name = c.Title
	copy(c.Header[:], header)
	copy(c.Footer[:], footer)
	if c.UnresolvedTags == nil {
		c.UnresolvedTags = []string{}
	}
	if fname != nil {
		c.ExecutedFile = &contracts.ExecutedFile{Filename: *fname, Size: *fsize, SHA256: *fsha,
			UploadedAt: timestamp.Of(*fat)}
	}
	return c, nil
}

func (s *Store) getContract(ctx context.Context, q db.Querier, id int64, lock bool) (contracts.Contract, error) {
	sql := contractSelect + ` WHERE c.id = $1`
	if lock {
		sql += ` FOR UPDATE OF c`
	}
	return one(ctx, q, scanContract, "contract", sql, id)
}

// GetContract returns one contract or not_found.
func (s *Store) GetContract(ctx context.Context, id int64) (contracts.Contract, error) {
	return s.getContract(ctx, s.db, id, false)
}

// ContractExists answers not_found for a missing contract.
// ContractOwner returns a contract's creator, who also stands as its
// assignee: contracts have none, and this keeps a team-scoped user to the
// contracts of their team.
func (s *Store) ContractOwner(ctx context.Context, id int64) (directory.Owner, error) {
	var o directory.Owner
	err := s.db.QueryRow(ctx, `SELECT created_by FROM contracts WHERE id = $1`, id).Scan(&o.CreatedBy)
	if db.IsNoRows(err) {
		return o, fault.NotFound("contract")
	}
	o.AssignedTo = o.CreatedBy
	return o, err
}

// CanWrite decides write access with this schema's user directory.
func (s *Store) CanWrite(ctx context.Context, o directory.Owner) error {
	return directory.CheckWrite(ctx, s.db, o)
}

func (s *Store) ContractExists(ctx context.Context, id int64) error {
	var ok bool
	if err := s.db.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM contracts WHERE id = $1)`, id).Scan(&ok); err != nil {
		return fmt.Errorf("contract exists: %w", err)
	}
	if !ok {
		return fault.NotFound("contract")
	}
	return nil
}

// FormatNumber renders {prefix}-{YYYY}-{NNNNN}.
func FormatNumber(prefix string, year int, n int64) string {
	return fmt.Sprintf("%s-%04d-%05d", prefix, year, n)
}

// CreateContract numbers and inserts c, with its contract.created event,
// in one transaction. The counter row of (prefix, year) is incremented
// first: its row lock makes concurrent creations of the same prefix and
// year wait for each other, and a rollback returns the number, so numbers
// are gapless and unique.
func (s *Store) CreateContract(ctx context.Context, c contracts.Contract, prefix string, year int, finish func(*contracts.Contract) error) (contracts.Contract, error) {
	var out contracts.Contract
	err := s.db.InTx(ctx, func(tx pgx.Tx) error {
		var n int64
		if err := tx.QueryRow(ctx, `INSERT INTO number_counters (prefix, year, last_value) VALUES ($1, $2, 1)
			ON CONFLICT (prefix, year) DO UPDATE SET last_value = number_counters.last_value + 1
			RETURNING last_value`, prefix, year).Scan(&n); err != nil {
			return fmt.Errorf("next contract number: %w", err)
		}
		c.ContractNumber = FormatNumber(prefix, year, n)
		if err := finish(&c); err != nil {
			return err
		}
		var id int64
		err := tx.QueryRow(ctx, `INSERT INTO contracts (contract_number, title, deal_id, deal_title, company_id,
			company_name, template_id, status, start_date, end_date, effective_date, termination_date, term_months,
			auto_renew, partner_ref, content, unresolved_tags, header_cells, footer_cells, created_by)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9::date, $10::date, $11::date, $12::date, $13, $14, $15, $16,
			$17, $18, $19, $20) RETURNING id`,
			c.ContractNumber, c.Title, c.DealID, c.DealTitle, c.CompanyID, c.CompanyName, c.TemplateID, c.Status,
			c.StartDate, c.EndDate, c.EffectiveDate, c.TerminationDate, c.TermMonths, c.AutoRenew, c.PartnerRef,
			c.Content, c.UnresolvedTags, c.Header[:], c.Footer[:], c.CreatedBy).Scan(&id)
		if db.IsForeignKeyViolation(err, "") {
			return fault.Invalid("template_id", "does not exist")
		}
		if err != nil {
			return fmt.Errorf("insert contract: %w", err)
		}
		if out, err = s.getContract(ctx, tx, id, false); err != nil {
			return err
		}
		return addEvents(ctx, tx, []outbox.Record{record(contracts.EventCreated, out)})
	})
	return out, err
}

// UpdateContract locks the contract, applies the change and saves it with
// its events (changeEvents).
func (s *Store) UpdateContract(ctx context.Context, id int64, apply func(*contracts.Contract) error) (contracts.Contract, error) {
	return s.modify(ctx, id, func(_ pgx.Tx, c *contracts.Contract) error { return apply(c) }, changeEvents)
}

// modify runs change on the contract locked in a transaction, saves it,
// records the events that events chooses from the contract before and
// after, and returns it as stored. An error anywhere rolls back the change
// and its events together.
func (s *Store) modify(ctx context.Context, id int64, change func(pgx.Tx, *contracts.Contract) error,
	events func(before snapshot, after contracts.Contract) ([]outbox.Record, error)) (contracts.Contract, error) {
	var out contracts.Contract
	err := s.db.InTx(ctx, func(tx pgx.Tx) error {
		c, err := s.getContract(ctx, tx, id, true)
		if err != nil {
			return err
		}
		before, err := snap(c)
		if err != nil {
			return err
		}
		if err := change(tx, &c); err != nil {
			return err
		}
		if err := s.save(ctx, tx, c); err != nil {
			return err
		}
		if out, err = s.getContract(ctx, tx, id, false); err != nil {
			return err
		}
		recs, err := events(before, out)
		if err != nil {
			return err
		}
		return addEvents(ctx, tx, recs)
	})
	return out, err
}

func (s *Store) save(ctx context.Context, tx pgx.Tx, c contracts.Contract) error {
	_, err := tx.Exec(ctx, `UPDATE contracts SET title = $2, deal_id = $3, deal_title = $4, company_id = $5,
		company_name = $6, template_id = $7, status = $8, start_date = $9::date, end_date = $10::date,
		effective_date = $11::date, termination_date = $12::date, term_months = $13, auto_renew = $14,
		partner_ref = $15, content = $16, unresolved_tags = $17, header_cells = $18, footer_cells = $19,
		updated_at = now() WHERE id = $1`,
		c.ID, c.Title, c.DealID, c.DealTitle, c.CompanyID, c.CompanyName, c.TemplateID, c.Status, c.StartDate,
		c.EndDate, c.EffectiveDate, c.TerminationDate, c.TermMonths, c.AutoRenew, c.PartnerRef, c.Content,
		c.UnresolvedTags, c.Header[:], c.Footer[:])
	if db.IsForeignKeyViolation(err, "") {
		return fault.Invalid("template_id", "does not exist")
	}
	if err != nil {
		return fmt.Errorf("save contract: %w", err)
	}
	return nil
}

// DeleteContract removes the contract, its notes, tasks and signed copy,
// if allow agrees, and records contract.deleted with only its id and the
// audit log's record.deleted. The
// contract row is locked first, the lock every change of the signed copy
// takes (modify), and the copy is looked for by a later statement: under
// READ COMMITTED that statement's snapshot includes every upload committed
// before the lock was granted, so the answer given to allow is current and
// stays so until the delete commits.
func (s *Store) DeleteContract(ctx context.Context, id int64, allow func(hasSignedCopy bool) error) error {
	return s.db.InTx(ctx, func(tx pgx.Tx) error {
		var locked int64
		err := tx.QueryRow(ctx, `SELECT id FROM contracts WHERE id = $1 FOR UPDATE`, id).Scan(&locked)
		if db.IsNoRows(err) {
			return fault.NotFound("contract")
		}
		if err != nil {
			return fmt.Errorf("lock contract: %w", err)
		}
		var hasCopy bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM executed_files WHERE contract_id = $1)`, id).Scan(&hasCopy); err != nil {
			return fmt.Errorf("find signed copy: %w", err)
		}
		if err := allow(hasCopy); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM contracts WHERE id = $1`, id); err != nil {
			return fmt.Errorf("delete contract: %w", err)
		}
		if err := activity.DeleteAll(ctx, tx, activity.Contract, id); err != nil {
			return err
		}
		if err := addEvents(ctx, tx, []outbox.Record{{Type: contracts.EventDeleted,
			AggregateID: strconv.FormatInt(id, 10), Data: outbox.Tombstone(id)}}); err != nil {
			return err
		}
		return audit.Record(ctx, tx, contractsapi.Service, audit.Entry{Action: identityapi.AuditRecordDeleted,
			Object: "contract", ID: strconv.FormatInt(id, 10), Details: map[string]string{"object": "contract"}})
	})
}

// contractSorts maps each of contracts.ContractSorts to its SQL.
var contractSorts = listsql.Sorts{
	By: map[string]string{
		"contract_number":  "c.contract_number",
		"name":             "lower(c.title)",
		"company_name":     "lower(c.company_name)",
		"deal_title":       "lower(c.deal_title)",
		"status":           "c.status",
		"effective_date":   "c.effective_date",
		"termination_date": "c.termination_date",
		"created_at":       "c.created_at",
		"updated_at":       "c.updated_at",
	},
	TieBreak: "c.id",
	Updated:  "c.updated_at",
}

// searchExpr must stay identical to the contracts_search index expression.
const searchExpr = `lower(c.contract_number || ' ' || c.title || ' ' || c.deal_title || ' ' ||
	coalesce(c.company_name, '') || ' ' || coalesce(c.partner_ref, ''))`

// ListContracts returns one page and the total.
func (s *Store) ListContracts(ctx context.Context, f contracts.ListFilter) ([]contracts.Contract, int, error) {
	q := f.Query
	var w listsql.Where
	if len(f.Statuses) > 0 {
		w.And("c.status = ANY(" + w.Arg(f.Statuses) + "::text[])")
	}
	if f.DealID != nil {
		w.And("c.deal_id = " + w.Arg(*f.DealID))
	}
	if f.ExpiringWithin != nil {
		today := f.Today
		w.And("c.status IN ('active', 'executed')")
		w.And("c.termination_date >= " + w.Arg(today) + "::date")
		w.And("c.termination_date <= " + w.Arg(today.AddDate(0, 0, *f.ExpiringWithin)) + "::date")
	}
	if q.Search != "" {
		w.And(searchExpr + " LIKE lower(" + w.Arg("%"+listsql.EscapeLike(q.Search)+"%") + ")")
	}
	if q.DateFrom != nil {
		w.And("c.created_at >= " + w.Arg(*q.DateFrom))
	}
	if q.DateTo != nil {
		w.And("c.created_at < " + w.Arg(*q.DateTo))
	}
	contractSorts.Since(&w, q)
	var total int
	if err := s.db.QueryRow(ctx, `SELECT count(*) FROM contracts c `+w.SQL(), w.Args()...).Scan(&total); err != nil {
		return nil, 0, fmt.Errorf("count contracts: %w", err)
	}
	order := contractSorts.OrderBy(q)
	rows, err := s.db.Query(ctx, contractSelect+" "+w.SQL()+" "+order+" "+listsql.LimitOffset(&w, q), w.Args()...)
	if err != nil {
		return nil, 0, fmt.Errorf("list contracts: %w", err)
	}
	out, err := pgx.CollectRows(rows, scanContract)
	if err != nil {
		return nil, 0, fmt.Errorf("list contracts: %w", err)
	}
	return out, total, nil
}
