package store

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/opencrm/crm/pkg/contract/contactsapi"
	"github.com/opencrm/crm/pkg/outbox"
	"github.com/opencrm/crm/services/contacts/internal/contacts"
)

// Import writes the valid rows of a file in one transaction at COPY speed,
// batch by batch as next yields them (the file is still being read):
// existing emails are skipped, the batch's ids are taken, rows holding
// custom values are checked and their unique values claimed
// (checkCustom), companies are found by case-insensitive name or created,
// and with the transaction's timestamp each row is written complete
// (company name and custom_fields included) by one COPY per batch into
// contacts; at the end the outbox gets one contacts.imported event per
// contacts.ImportEventIDs ids. Trigram entries wait in the GIN pending
// list and are merged in the background after commit (cleanSearchIndex).
// A dry run stops after the duplicate checks: it counts, writes nothing.
func (s *Store) Import(ctx context.Context, next func() ([]contacts.ImportRow, error), dryRun bool) (int, []contacts.RowError, error) {
	var w *importWriter
	err := s.db.InTx(ctx, func(tx pgx.Tx) error {
		w = &importWriter{tx: tx, companies: map[string]*company{}, users: s.users.Exists}
		// One import at a time, so two files cannot both add one email.
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext('contacts.import'))`); err != nil {
			return err
		}
		for {
			rows, err := next()
			if err != nil {
				return err
			}
			if rows == nil {
				break
			}
			keep, err := w.skipExisting(ctx, rows)
			if err != nil {
				return err
			}
			if !dryRun {
				if err := w.allocate(ctx, keep); err != nil {
					return err
				}
			}
			if keep, err = w.checkCustom(ctx, keep, dryRun); err != nil {
				return err
			}
			if dryRun {
				w.imported += len(keep)
				continue
			}
			if err := w.write(ctx, keep); err != nil {
				return err
			}
		}
		if len(w.ids) == 0 {
			return nil
		}
		if _, err := tx.Exec(ctx, `SET LOCAL contacts.bulk_company_name = 'off'`); err != nil {
			return err
		}
		// One statement for every event (outbox.AddMany keeps their order).
		events := make([]outbox.Record, 0, (len(w.ids)+contacts.ImportEventIDs-1)/contacts.ImportEventIDs)
		for chunk := range slices.Chunk(w.ids, contacts.ImportEventIDs) {
			events = append(events, outbox.Record{Type: contacts.ContactsImported, AggregateID: idStr(chunk[0]),
				Data: contacts.Imported{IDs: chunk}})
		}
		return outbox.AddMany(ctx, tx, Stream, events)
	})
	if err != nil {
		return 0, nil, err
	}
	if len(w.ids) > 0 {
		s.cleanSearchIndex(ctx)
		// The rows' phone_e164 is left pending (parsing a number is
		// 17 µs: 1.7 s of a 100,000-row import) and filled right after.
		s.normalisePhones(ctx)
	}
	return w.imported, w.skipped, nil
}

// importWriter is the state of one import's transaction across batches.
type importWriter struct {
	tx        pgx.Tx
	companies map[string]*company // by lower-cased name, resolved so far
	now       time.Time           // the transaction's timestamp, once written
	ids       []int64             // of the rows written, in row order
	imported  int
	skipped   []contacts.RowError
	// users answers whether a user id exists (a user field's check).
	users func(context.Context, int64) (bool, error)
	// custom is the custom-field state, once a batch holds values.
	custom *importCustom
}

// skipExisting drops (and records as skipped) the rows whose email a
// stored contact already has. Earlier batches of the file are stored
// too by then, but the reader already dropped repeats within the file.
func (w *importWriter) skipExisting(ctx context.Context, rows []contacts.ImportRow) ([]contacts.ImportRow, error) {
	emails := make([]string, 0, len(rows))
	for _, r := range rows {
		if r.Contact.Email != nil {
			emails = append(emails, strings.ToLower(*r.Contact.Email))
		}
	}
	if len(emails) == 0 {
		return rows, nil
	}
	type stored struct {
		Email string
		ID    int64
	}
	// The oldest contact holding the email is the one a row duplicates.
	res, err := w.tx.Query(ctx, `SELECT lower(email), min(id) FROM contacts
		WHERE lower(email) = ANY($1) AND `+anyStatus+` GROUP BY lower(email)`, emails)
	if err != nil {
		return nil, err
	}
	found, err := pgx.CollectRows(res, pgx.RowToStructByPos[stored])
	if err != nil || len(found) == 0 {
		return rows, err
	}
	existing := make(map[string]int64, len(found))
	for _, e := range found {
		existing[e.Email] = e.ID
	}
	keep := rows[:0]
	for _, r := range rows {
		if r.Contact.Email == nil {
			keep = append(keep, r)
			continue
		}
		if id, ok := existing[strings.ToLower(*r.Contact.Email)]; ok {
			w.skipped = append(w.skipped, contacts.RowError{Row: r.Row,
				Message:   "duplicate email " + *r.Contact.Email + " (already exists)",
				Duplicate: &contactsapi.ImportDuplicate{Row: r.Row, Email: *r.Contact.Email, DuplicateOf: id}})
			continue
		}
		keep = append(keep, r)
	}
	return keep, nil
}

// copyColumns are the columns the import writes, in copyRow's order; a
// batch that holds custom-field values writes customColumns.
var (
	copyColumns = []string{"id", "first_name", "last_name", "email", "phone", "mobile", "job_title", "company_id",
		"company_name", "address_street", "address_city", "address_state", "address_zip", "address_country", "notes",
		"tags", "status", "source", "created_at", "updated_at"}
	customColumns = append(slices.Clip(copyColumns), "custom_fields")
)

// noCustom is the custom_fields of a row without values, encoded and
// boxed once.
var noCustom any = []byte("{}")

// allocate gives the batch's rows their ids, ascending in row order. The
// sequence is looked up once: pg_get_serial_sequence per row was 270 ms of
// 100,000 nextval calls (now 50 ms).
func (w *importWriter) allocate(ctx context.Context, rows []contacts.ImportRow) error {
	if len(rows) == 0 {
		return nil
	}
	var ids []int64
	if err := w.tx.QueryRow(ctx, `WITH s AS MATERIALIZED (SELECT pg_get_serial_sequence('contacts', 'id')::regclass AS seq)
		SELECT ARRAY(SELECT nextval(seq) FROM s, generate_series(1, $1))`, len(rows)).Scan(&ids); err != nil {
		return err
	}
	slices.Sort(ids)
	for i := range rows {
		rows[i].Contact.ID = ids[i]
	}
	return nil
}

// write stores one batch, its ids allocated: its new companies, then one
// COPY.
func (w *importWriter) write(ctx context.Context, rows []contacts.ImportRow) error {
	if len(rows) == 0 {
		return nil
	}
	if w.now.IsZero() {
		if err := w.tx.QueryRow(ctx, `SELECT now()`).Scan(&w.now); err != nil {
			return err
		}
		// The names are read under FOR SHARE in this transaction (see
		// resolveCompanies), so the per-row company-name trigger has
		// nothing to add.
		if _, err := w.tx.Exec(ctx, `SET LOCAL contacts.bulk_company_name = 'on'`); err != nil {
			return err
		}
		// Trigram entries go to the GIN pending list (fastupdate, the
		// default) instead of being merged into the index every 4 MB
		// during the COPY; cleanSearchIndex merges them after commit.
		if _, err := w.tx.Exec(ctx, `SET LOCAL gin_pending_list_limit = '`+importPendingList+`'`); err != nil {
			return err
		}
	}
	if err := resolveCompanies(ctx, w.tx, rows, w.companies); err != nil {
		return err
	}
	columns := copyColumns
	if slices.ContainsFunc(rows, hasCustom) {
		columns = customColumns
	}
	now := any(w.now)
	vals := make([]any, len(columns)) // CopyFrom encodes a row before asking for the next
	i := 0
	if _, err := w.tx.CopyFrom(ctx, pgx.Identifier{"contacts"}, columns, pgx.CopyFromFunc(func() ([]any, error) {
		if i == len(rows) {
			return nil, nil
		}
		r := &rows[i]
		c := &r.Contact
		c.CompanyID, c.CompanyName = nil, nil
		if r.CompanyName != "" {
			co := w.companies[strings.ToLower(r.CompanyName)]
			c.CompanyID, c.CompanyName = &co.ID, &co.Name // shared by the company's rows
		}
		i++
		// Pointers, so no value is copied into an interface per row.
		vals[0], vals[1], vals[2], vals[3], vals[4], vals[5], vals[6] = &c.ID, &c.FirstName, &c.LastName, c.Email, c.Phone, c.Mobile, c.JobTitle
		vals[7], vals[8], vals[9], vals[10], vals[11] = c.CompanyID, c.CompanyName, c.AddressStreet, c.AddressCity, c.AddressState
		vals[12], vals[13], vals[14], vals[15], vals[16] = c.AddressZip, c.AddressCountry, c.Notes, c.Tags, &c.Status
		vals[17], vals[18], vals[19] = c.Source, now, now
		if len(vals) > len(copyColumns) {
			vals[20] = noCustom
			if r.Custom != nil {
				vals[20] = r.Custom
			}
		}
		return vals, nil
	})); err != nil {
		return err
	}
	for _, r := range rows {
		w.ids = append(w.ids, r.Contact.ID)
	}
	w.imported += len(rows)
	return nil
}

// importPendingList is the import transaction's gin_pending_list_limit:
// above the ~90 MB of trigram entries 100,000 rows add, so the COPY never
// stops to merge them.
const importPendingList = "256MB"

// cleanSearchIndex merges the trigram entries an import left in the GIN
// pending list into the index (contacts_search_trgm, on the contact_search
// projection the import's rows reach through its trigger), in the background: until then every search
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

// resolveCompanies adds to ids (by lower-cased name) each company name of
// rows it lacks, creating (with events) the companies that do not exist
// yet. Existing companies are share-locked, so a rename cannot commit
// between reading the name here and the import's commit.
func resolveCompanies(ctx context.Context, tx pgx.Tx, rows []contacts.ImportRow, ids map[string]*company) error {
	var names, lowers []string
	for _, r := range rows {
		if r.CompanyName == "" {
			continue
		}
		k := strings.ToLower(r.CompanyName)
		if _, ok := ids[k]; ok {
			continue
		}
		ids[k] = nil // until found or created
		names = append(names, r.CompanyName)
		lowers = append(lowers, k)
	}
	if len(names) == 0 {
		return nil
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
		return err
	}
	existing, err := pgx.CollectRows(res, scan)
	if err != nil {
		return err
	}
	for _, f := range existing {
		// The oldest of same-named companies wins.
		if ids[f.Lower] == nil {
			ids[f.Lower] = &f.company
		}
	}
	var missing []string
	for i, n := range names {
		if ids[lowers[i]] == nil {
			missing = append(missing, n)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	res, err = tx.Query(ctx, `WITH ins AS (
			INSERT INTO companies (name) SELECT unnest($1::text[]) RETURNING id, name, `+companyJSON+` AS payload),
		ev AS (INSERT INTO outbox (stream, type, aggregate_id, payload)
			SELECT $2, $3, id::text, payload FROM ins)
		SELECT lower(name), name, id FROM ins`, missing, Stream, contacts.CompanyCreated)
	if err != nil {
		return err
	}
	created, err := pgx.CollectRows(res, scan)
	if err != nil {
		return err
	}
	for _, f := range created {
		ids[f.Lower] = &f.company
	}
	return nil
}
