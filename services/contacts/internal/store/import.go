package store

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/opencrm/crm/pkg/outbox"
	"github.com/opencrm/crm/services/contacts/internal/contacts"
)

// Import writes the valid rows of a file in one transaction at COPY speed:
// existing emails are skipped, companies are found by case-insensitive
// name or created, ids and the transaction's timestamp are taken up front,
// so each row is written complete (company name included) by one COPY into
// contacts; the outbox gets one contacts.imported event per
// contacts.ImportEventIDs ids. Trigram entries wait in the GIN pending list
// and are merged in the background after commit (cleanSearchIndex). A
// dry run stops after the duplicate check: it counts, writes nothing.
func (s *Store) Import(ctx context.Context, rows []contacts.ImportRow, dryRun bool) (int, []contacts.RowError, error) {
	var skipped []contacts.RowError
	imported := 0
	err := s.db.InTx(ctx, func(tx pgx.Tx) error {
		skipped, imported = nil, 0
		// One import at a time, so two files cannot both add one email.
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext('contacts.import'))`); err != nil {
			return err
		}
		emails := make([]string, 0, len(rows))
		for _, r := range rows {
			if r.Contact.Email != nil {
				emails = append(emails, strings.ToLower(*r.Contact.Email))
			}
		}
		existing := map[string]bool{}
		if len(emails) > 0 {
			res, err := tx.Query(ctx, `SELECT lower(email) FROM contacts
				WHERE lower(email) = ANY($1) AND `+anyStatus, emails)
			if err != nil {
				return err
			}
			found, err := pgx.CollectRows(res, pgx.RowTo[string])
			if err != nil {
				return err
			}
			for _, e := range found {
				existing[e] = true
			}
		}
		keep := rows[:0:0]
		for _, r := range rows {
			if r.Contact.Email != nil && existing[strings.ToLower(*r.Contact.Email)] {
				skipped = append(skipped, contacts.RowError{Row: r.Row, Message: "duplicate email " + *r.Contact.Email + " (already exists)"})
				continue
			}
			keep = append(keep, r)
		}
		if len(keep) == 0 || dryRun {
			imported = len(keep)
			return nil
		}
		companies, err := resolveCompanies(ctx, tx, keep)
		if err != nil {
			return err
		}
		var now time.Time
		if err := tx.QueryRow(ctx, `SELECT now()`).Scan(&now); err != nil {
			return err
		}
		// The sequence is looked up once: pg_get_serial_sequence per row
		// was 270 ms of 100,000 nextval calls (now 50 ms).
		var ids []int64
		if err := tx.QueryRow(ctx, `WITH s AS MATERIALIZED (SELECT pg_get_serial_sequence('contacts', 'id')::regclass AS seq)
			SELECT ARRAY(SELECT nextval(seq) FROM s, generate_series(1, $1))`, len(keep)).Scan(&ids); err != nil {
			return err
		}
		slices.Sort(ids)
		list := make([]contacts.Contact, len(keep))
		for i, r := range keep {
			c := r.Contact
			c.ID, c.CompanyID, c.CompanyName, c.AssignedTo = ids[i], nil, nil, nil
			c.CreatedAt.Time, c.UpdatedAt.Time = now, now
			if r.CompanyName != "" {
				co := companies[strings.ToLower(r.CompanyName)]
				c.CompanyID, c.CompanyName = &co.ID, &co.Name
			}
			list[i] = c
		}
		// The names were read under FOR SHARE in this transaction, so the
		// per-row company-name trigger has nothing to add.
		if _, err := tx.Exec(ctx, `SET LOCAL contacts.bulk_company_name = 'on'`); err != nil {
			return err
		}
		// Trigram entries go to the GIN pending list (fastupdate, the
		// default) instead of being merged into the index every 4 MB
		// during the COPY; cleanSearchIndex merges them after commit.
		if _, err := tx.Exec(ctx, `SET LOCAL gin_pending_list_limit = '`+importPendingList+`'`); err != nil {
			return err
		}
		i := 0
		if _, err := tx.CopyFrom(ctx, pgx.Identifier{"contacts"}, []string{"id", "first_name", "last_name", "email",
			"phone", "mobile", "job_title", "company_id", "company_name", "address_street", "address_city",
			"address_state", "address_zip", "address_country", "notes", "tags", "status", "source", "created_at",
			"updated_at"}, pgx.CopyFromFunc(func() ([]any, error) {
			if i == len(list) {
				return nil, nil
			}
			c := &list[i]
			i++
			return []any{c.ID, c.FirstName, c.LastName, c.Email, c.Phone, c.Mobile, c.JobTitle, c.CompanyID,
				c.CompanyName, c.AddressStreet, c.AddressCity, c.AddressState, c.AddressZip, c.AddressCountry,
				c.Notes, c.Tags, c.Status, c.Source, c.CreatedAt.Time, c.UpdatedAt.Time}, nil
		})); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `SET LOCAL contacts.bulk_company_name = 'off'`); err != nil {
			return err
		}
		// One statement for every event (outbox.AddMany keeps their order).
		events := make([]outbox.Record, 0, (len(ids)+contacts.ImportEventIDs-1)/contacts.ImportEventIDs)
		for chunk := range slices.Chunk(ids, contacts.ImportEventIDs) {
			events = append(events, outbox.Record{Type: contacts.ContactsImported, AggregateID: idStr(chunk[0]),
				Data: contacts.Imported{IDs: chunk}})
		}
		if err := outbox.AddMany(ctx, tx, Stream, events); err != nil {
			return err
		}
		imported = len(list)
		return nil
	})
	if err == nil && imported > 0 {
		s.cleanSearchIndex(ctx)
	}
	return imported, skipped, err
}

// importPendingList is the import transaction's gin_pending_list_limit:
// above the ~90 MB of trigram entries 100,000 rows add, so the COPY never
// stops to merge them.
const importPendingList = "256MB"

// cleanSearchIndex merges the trigram entries an import left in the GIN
// pending list into the index, in the background: until then every search
// also scans the pending list (correct, but slower). It runs under its own
// deadline, detached from the request, and only logs a failure; autovacuum
// or the next insert past the default limit would merge the list anyway.
func (s *Store) cleanSearchIndex(ctx context.Context) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanTimeout)
	go func() {
		defer cancel()
		start := time.Now()
		var pages int64
		err := s.db.QueryRow(ctx, `SELECT gin_clean_pending_list('contacts_search_trgm')`).Scan(&pages)
		if err != nil {
			s.log.ErrorContext(ctx, "merge search index pending list", "error", err.Error())
			return
		}
		s.log.InfoContext(ctx, "merged search index pending list", "pages", pages,
			"took_ms", time.Since(start).Milliseconds())
	}()
}

// cleanTimeout bounds cleanSearchIndex (100,000 rows take about a second).
const cleanTimeout = 5 * time.Minute

// company is a resolved company of an import.
type company struct {
	Name string
	ID   int64
}

// resolveCompanies maps each lower-cased company name of rows to a company,
// creating (with events) the companies that do not exist yet. Existing
// companies are share-locked, so a rename cannot commit between reading the
// name here and the import's commit.
func resolveCompanies(ctx context.Context, tx pgx.Tx, rows []contacts.ImportRow) (map[string]company, error) {
	ids := map[string]company{}
	var names, lowers []string
	for _, r := range rows {
		if r.CompanyName == "" {
			continue
		}
		k := strings.ToLower(r.CompanyName)
		if _, ok := ids[k]; ok {
			continue
		}
		ids[k] = company{}
		names = append(names, r.CompanyName)
		lowers = append(lowers, k)
	}
	if len(names) == 0 {
		return ids, nil
	}
	type found struct {
		Lower string
		company
	}
	scan := func(row pgx.CollectableRow) (found, error) {
		var f found
		err := row.Scan(&f.Lower, &f.Name, &f.ID)
		return f, err
	}
	res, err := tx.Query(ctx, `SELECT lower(name), name, id FROM companies
		WHERE lower(name) = ANY($1) ORDER BY id FOR SHARE`, lowers)
	if err != nil {
		return nil, err
	}
	existing, err := pgx.CollectRows(res, scan)
	if err != nil {
		return nil, err
	}
	for _, f := range existing {
		// The oldest of same-named companies wins.
		if ids[f.Lower].ID == 0 {
			ids[f.Lower] = f.company
		}
	}
	var missing []string
	for _, n := range names {
		if ids[strings.ToLower(n)].ID == 0 {
			missing = append(missing, n)
		}
	}
	if len(missing) == 0 {
		return ids, nil
	}
	res, err = tx.Query(ctx, `WITH ins AS (
			INSERT INTO companies (name) SELECT unnest($1::text[]) RETURNING id, name, `+companyJSON+` AS payload),
		ev AS (INSERT INTO outbox (stream, type, aggregate_id, payload)
			SELECT $2, $3, id::text, payload FROM ins)
		SELECT lower(name), name, id FROM ins`, missing, Stream, contacts.CompanyCreated)
	if err != nil {
		return nil, err
	}
	created, err := pgx.CollectRows(res, scan)
	if err != nil {
		return nil, err
	}
	for _, f := range created {
		ids[f.Lower] = f.company
	}
	return ids, nil
}
