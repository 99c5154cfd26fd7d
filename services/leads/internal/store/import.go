package store

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"

	"github.com/jackc/pgx/v5"

	"github.com/opencrm/crm/pkg/customfield"
	"github.com/opencrm/crm/services/leads/internal/leads"
)

// ImportRow is one valid row of a file, with its spreadsheet row number.
// Lead.CustomFields holds the row's custom-field values (nil for none).
type ImportRow struct {
	Row  int
	Lead leads.Lead
}

// ImportSkip is a valid row the table or the file already had: its
// email, or the value of a unique custom field.
type ImportSkip struct {
	Row int
	// Column is what repeats: email, or cf.<name> for a custom field.
	Column string
	Value  string
	// DupOf is the earlier row of the file with the same value; 0 when a
	// lead in the table already holds it.
	DupOf int
	// Lead is the existing lead whose email the row repeats (the oldest
	// with it); 0 for any other skip.
	Lead int64
}

// ImportOutcome is what an import wrote or, in a dry run, would write.
type ImportOutcome struct {
	Imported int
	// Skipped counts every duplicate; Skips holds the first max of them,
	// by row.
	Skipped int
	Skips   []ImportSkip
}

// ImportOptions steer Import.
type ImportOptions struct {
	// DryRun counts and checks duplicates, writes nothing.
	DryRun bool
	// MaxSkips bounds ImportOutcome.Skips.
	MaxSkips int
	// BeforeWrite runs once the rows are staged, before the lock and any
	// write; its error aborts the import (the rest of an upload refused).
	BeforeWrite func() error
	// Definitions are the custom fields of leads the rows were read
	// with; the import refuses to write when they changed meanwhile.
	Definitions []customfield.Definition
	// Audit, when set, runs last in the import's transaction (not in a
	// dry run), after the leads were written, with what was written: the
	// audit log's entry is recorded exactly when the import commits.
	Audit func(ctx context.Context, tx pgx.Tx, out ImportOutcome) error
}

// importChunk is how many created leads are read back at a time for
// their lead.created events.
const importChunk = 2000

// Import streams the rows next yields into a temporary staging table with
// COPY — the file is never held in memory — then, under the import lock,
// skips emails an earlier row of the file or a lead in the table already
// has (case-insensitive), and values of a unique custom field an earlier
// row or a lead holds, inserts the rest in row order with their custom
// fields and writes their lead.created events. next returns ok=false at
// the end; its error (a rejected file) aborts everything: one transaction,
// nothing written. Imports run one at a time: the duplicate check runs
// after the lock, so it sees every earlier import; unique values are
// claimed (customfield's claims) before the leads are written, so a
// single write holding one meanwhile skips the row instead of failing
// the import.
func (s *Store) Import(ctx context.Context, next func() (ImportRow, bool, error), opt ImportOptions) (ImportOutcome, error) {
	var out ImportOutcome
	err := s.db.InTx(ctx, func(tx pgx.Tx) error {
		out = ImportOutcome{}
		defs, err := importDefinitions(ctx, tx, opt.Definitions)
		if err != nil {
			return err
		}
		// skip is the column of a skipped row's repeated value (email or
		// cf.<name>), NULL for a row to write; id is given to the rows
		// that claim unique values before they are written.
		if _, err := tx.Exec(ctx, `CREATE TEMP TABLE lead_import (
				row int PRIMARY KEY, first_name text, last_name text, email text, phone text, company text,
				job_title text, source text, status text, notes text, tags text, created_by bigint,
				custom_fields jsonb, id bigint, skip text, skip_value text, dup_of int, dup_lead bigint) ON COMMIT DROP`); err != nil {
			return fmt.Errorf("import leads: stage: %w", err)
		}
		src := &rowSource{next: next}
		if _, err := tx.CopyFrom(ctx, pgx.Identifier{"lead_import"}, []string{"row", "first_name", "last_name", "email",
			"phone", "company", "job_title", "source", "status", "notes", "tags", "created_by", "custom_fields"}, src); err != nil {
			if src.err != nil {
				return src.err // the file's own problem, not the database's
			}
			return fmt.Errorf("import leads: stage: %w", err)
		}
		if opt.BeforeWrite != nil {
			if err := opt.BeforeWrite(); err != nil {
				return err
			}
		}
		if !opt.DryRun {
			if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext($1))`, ImportLock); err != nil {
				return fmt.Errorf("import leads: lock: %w", err)
			}
		}
		if err := markDuplicates(ctx, tx); err != nil {
			return err
		}
		if err := markUnique(ctx, tx, defs, opt.DryRun); err != nil {
			return err
		}
		if err := tx.QueryRow(ctx, `SELECT count(*) FILTER (WHERE skip IS NULL),
				count(*) FILTER (WHERE skip IS NOT NULL) FROM lead_import`).Scan(&out.Imported, &out.Skipped); err != nil {
			return fmt.Errorf("import leads: count: %w", err)
		}
		rows, err := tx.Query(ctx, `SELECT row, skip, skip_value, coalesce(dup_of, 0), coalesce(dup_lead, 0) FROM lead_import
			WHERE skip IS NOT NULL ORDER BY row LIMIT $1`, opt.MaxSkips)
		if err != nil {
			return fmt.Errorf("import leads: skips: %w", err)
		}
		if out.Skips, err = pgx.CollectRows(rows, pgx.RowToStructByPos[ImportSkip]); err != nil {
			return fmt.Errorf("import leads: skips: %w", err)
		}
		if opt.DryRun {
			return nil
		}
		if out.Imported > 0 {
			if err := insertStaged(ctx, tx, defs); err != nil {
				return err
			}
		}
		if opt.Audit != nil {
			return opt.Audit(ctx, tx, out)
		}
		return nil
	})
	if err != nil {
		return ImportOutcome{}, err
	}
	return out, nil
}

// markDuplicates flags staged rows whose email an earlier row has, then
// the remaining ones whose email a lead in the table has, naming the
// oldest such lead (one probe of the email index per row).
func markDuplicates(ctx context.Context, tx pgx.Tx) error {
	if _, err := tx.Exec(ctx, `UPDATE lead_import i SET skip = 'email', skip_value = i.email, dup_of = f.first
		FROM (SELECT row, first_value(row) OVER (PARTITION BY lower(email) ORDER BY row) AS first
			FROM lead_import WHERE email IS NOT NULL) f
		WHERE i.row = f.row AND f.first <> f.row`); err != nil {
		return fmt.Errorf("import leads: duplicates in file: %w", err)
	}
	if _, err := tx.Exec(ctx, `UPDATE lead_import i SET skip = 'email', skip_value = i.email, dup_lead = m.lead
		FROM (SELECT s.row, (SELECT l.id FROM leads l WHERE lower(l.email) = lower(s.email)
				ORDER BY lower(l.email), l.id LIMIT 1) AS lead
			FROM lead_import s WHERE s.skip IS NULL AND s.email IS NOT NULL) m
		WHERE i.row = m.row AND m.lead IS NOT NULL`); err != nil {
		return fmt.Errorf("import leads: existing emails: %w", err)
	}
	return nil
}

// insertStaged inserts the kept rows in row order (with the ids their
// claims took, if any) and adds a lead.created event per lead, reading the
// leads back a chunk at a time and rendering their custom fields with
// defs.
func insertStaged(ctx context.Context, tx pgx.Tx, defs []customfield.Definition) error {
	rows, err := tx.Query(ctx, `INSERT INTO leads (id, first_name, last_name, email, phone, company, job_title, source,
			status, notes, tags, created_by, custom_fields)
		SELECT coalesce(id, nextval('leads_id_seq')), first_name, last_name, email, phone, company, job_title, source,
			status, notes, tags, created_by, coalesce(custom_fields, '{}')
		FROM lead_import WHERE skip IS NULL ORDER BY row
		RETURNING id`)
	if err != nil {
		return fmt.Errorf("import leads: %w", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return fmt.Errorf("import leads: %w", err)
	}
	slices.Sort(ids)
	for chunk := range slices.Chunk(ids, importChunk) {
		rows, err := tx.Query(ctx, `SELECT `+Columns+` FROM leads WHERE id = ANY($1) ORDER BY id`, chunk)
		if err != nil {
			return fmt.Errorf("import leads: %w", err)
		}
		created, err := pgx.CollectRows(rows, Scan)
		if err != nil {
			return fmt.Errorf("import leads: %w", err)
		}
		for i := range created {
			render(defs, &created[i])
		}
		_, err = tx.CopyFrom(ctx, pgx.Identifier{"outbox"}, []string{"stream", "type", "aggregate_id", "payload"},
			pgx.CopyFromSlice(len(created), func(i int) ([]any, error) {
				payload, err := json.Marshal(created[i])
				if err != nil {
					return nil, err
				}
				return []any{leads.Stream, leads.EventCreated, strconv.FormatInt(created[i].ID, 10), json.RawMessage(payload)}, nil
			}))
		if err != nil {
			return fmt.Errorf("import leads: events: %w", err)
		}
	}
	return nil
}

// rowSource feeds COPY from the file as it is read.
type rowSource struct {
	next func() (ImportRow, bool, error)
	cur  ImportRow
	err  error
}

func (s *rowSource) Next() bool {
	r, ok, err := s.next()
	if err != nil {
		s.err = err
		return false
	}
	s.cur = r
	return ok
}

func (s *rowSource) Values() ([]any, error) {
	l := &s.cur.Lead
	var custom any // NULL: the row holds none
	if len(l.CustomFields) > 0 {
		custom = l.CustomFields
	}
	return []any{s.cur.Row, l.FirstName, l.LastName, l.Email, l.Phone, l.Company, l.JobTitle, l.Source, l.Status,
		l.Notes, l.Tags, l.CreatedBy, custom}, nil
}

func (s *rowSource) Err() error { return s.err }

// ImportLock names the advisory lock every lead import holds for its
// transaction (as contacts' imports do), so two files cannot both add one
// email: the second checks the table only after the first committed.
const ImportLock = "leads.import"
