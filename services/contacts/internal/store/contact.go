package store

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/opencrm/crm/pkg/activity"
	"github.com/opencrm/crm/pkg/audit"
	"github.com/opencrm/crm/pkg/contract/contactsapi"
	"github.com/opencrm/crm/pkg/contract/identityapi"
	"github.com/opencrm/crm/pkg/contract/propertyapi"
	"github.com/opencrm/crm/pkg/customfield"
	"github.com/opencrm/crm/pkg/directory"
	"github.com/opencrm/crm/pkg/fault"
	"github.com/opencrm/crm/pkg/idempotency"
	"github.com/opencrm/crm/pkg/outbox"
	"github.com/opencrm/crm/services/contacts/internal/contacts"
)

const contactCols = `id, first_name, last_name, email, phone, mobile, job_title, company_id, company_name,
	address_street, address_city, address_state, address_zip, address_country, notes, tags, status, source,
	assigned_to, created_at, updated_at, custom_fields`

// contactJSON builds a contact's API JSON in SQL, for events of bulk
// writes (import, company unlink) that never pass through Go structs.
var contactJSON = `jsonb_build_object('id', id, 'first_name', first_name, 'last_name', last_name,
	'email', email, 'phone', phone, 'mobile', mobile, 'job_title', job_title, 'company_id', company_id,
	'company_name', company_name, 'address_street', address_street, 'address_city', address_city,
	'address_state', address_state, 'address_zip', address_zip, 'address_country', address_country,
	'notes', notes, 'tags', tags, 'status', status, 'source', source, 'assigned_to', assigned_to,
	'custom_fields', ` + renderSQL(propertyapi.Contacts) + `,
	'created_at', to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'),
	'updated_at', to_char(updated_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'))`

func scanContact(row pgx.CollectableRow) (contacts.Contact, error) {
	var c contacts.Contact
	err := row.Scan(&c.ID, &c.FirstName, &c.LastName, &c.Email, &c.Phone, &c.Mobile, &c.JobTitle,
		&c.CompanyID, &c.CompanyName, &c.AddressStreet, &c.AddressCity, &c.AddressState, &c.AddressZip,
		&c.AddressCountry, &c.Notes, &c.Tags, &c.Status, &c.Source, &c.AssignedTo,
		&c.CreatedAt.Time, &c.UpdatedAt.Time, &c.CustomFields)
	return c, err
}

// insertedCols are contactCols without custom_fields, which a batch
// insert does not read back; scanInserted reads them.
const insertedCols = `id, first_name, last_name, email, phone, mobile, job_title, company_id, company_name,
	address_street, address_city, address_state, address_zip, address_country, notes, tags, status, source,
	assigned_to, created_at, updated_at`

func scanInserted(row pgx.CollectableRow) (contacts.Contact, error) {
	var c contacts.Contact
	err := row.Scan(&c.ID, &c.FirstName, &c.LastName, &c.Email, &c.Phone, &c.Mobile, &c.JobTitle,
		&c.CompanyID, &c.CompanyName, &c.AddressStreet, &c.AddressCity, &c.AddressState, &c.AddressZip,
		&c.AddressCountry, &c.Notes, &c.Tags, &c.Status, &c.Source, &c.AssignedTo,
		&c.CreatedAt.Time, &c.UpdatedAt.Time)
	return c, err
}

// GetContact reads one contact.
func (s *Store) GetContact(ctx context.Context, id int64) (contacts.Contact, error) {
	c, err := one(s.db, ctx, scanContact, "contact", `SELECT `+contactCols+` FROM contacts WHERE id = $1`, id)
	if err != nil {
		return c, err
	}
	return c, s.renderContacts(ctx, &c)
}

// insertContact inserts c, whose CustomFields are the values it holds,
// claims its unique values and records its event; the answer reads as
// the API shows it.
func insertContact(ctx context.Context, tx pgx.Tx, c contacts.Contact) (contacts.Contact, error) {
	defs, err := hold(ctx, tx, propertyapi.Contacts)
	if err != nil {
		return contacts.Contact{}, err
	}
	created, _, err := insertContacts(ctx, tx, defs, []contacts.Contact{c}, nil)
	if err != nil {
		return contacts.Contact{}, err
	}
	return created[0], nil
}

// insertContactCols are the columns a create writes, in the order of
// both inserts' arguments.
const insertContactCols = `first_name, last_name, email, phone, mobile, job_title, company_id, address_street,
	address_city, address_state, address_zip, address_country, notes, tags, status, source, assigned_to, created_by,
	custom_fields, phone_e164`

// insertContacts inserts cs, whose CustomFields are the values each holds
// (checked again against defs, the definitions the transaction holds),
// with one statement whatever their number: the table's statement
// triggers (the counts, the count cubes) fire once per batch, not once
// per contact. Their unique values are then claimed with one statement
// (none when they hold none) and their events recorded with one. The
// answers read as the API shows them, in cs' order. A failure of one
// contact (a value the held definitions refuse, a company gone, a unique
// value another record holds) comes with its index in cs, -1 when it is
// no contact's.
//
// encoded, when not nil, gets each created contact's JSON by id: its event
// carries those bytes (outbox.Encoded), so a batch answers them without
// encoding the contacts again.
func insertContacts(ctx context.Context, tx pgx.Tx, defs []customfield.Definition, cs []contacts.Contact, encoded map[int64][]byte) ([]contacts.Contact, int, error) {
	for i, c := range cs {
		if err := customfield.Recheck(ctx, defs, nil, contacts.Held(c.CustomFields)); err != nil {
			return nil, i, err
		}
	}
	var rows pgx.Rows
	var err error
	scan := scanContact
	var held []customfield.Values // what a batch writes in custom_fields
	if len(cs) == 1 {
		// A single create: its own plain statement, as before batches.
		c := cs[0]
		rows, err = tx.Query(ctx, `INSERT INTO contacts (`+insertContactCols+`)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20)
			RETURNING `+contactCols,
			c.FirstName, c.LastName, c.Email, c.Phone, c.Mobile, c.JobTitle, c.CompanyID, c.AddressStreet,
			c.AddressCity, c.AddressState, c.AddressZip, c.AddressCountry, c.Notes, c.Tags, c.Status, c.Source, c.AssignedTo,
			directory.Caller(ctx), contacts.Held(c.CustomFields), phoneKey(c.Phone, c.Mobile))
	} else {
		if at, err := companiesKept(ctx, tx, cs); err != nil {
			return nil, at, err
		}
		held = make([]customfield.Values, len(cs))
		for i, c := range cs {
			held[i] = contacts.Held(c.CustomFields)
		}
		rows, err = insertMany(ctx, tx, cs, held)
		scan = scanInserted
	}
	var created []contacts.Contact
	if err == nil {
		created, err = pgx.CollectRows(rows, scan)
	}
	if err != nil {
		// Only a single create can fail on its company (companiesKept
		// holds a batch's): the failure is the one contact's.
		if len(cs) == 1 {
			return nil, 0, refErr(err)
		}
		return nil, -1, err
	}
	// The ids were drawn in cs' order (see insertMany); RETURNING's own
	// order is not promised.
	slices.SortFunc(created, func(a, b contacts.Contact) int { return cmp.Compare(a.ID, b.ID) })
	ids := make([]int64, len(created))
	for i := range created {
		if held != nil {
			// A batch did not read custom_fields back: it holds what
			// was written, as reading it would give it.
			if created[i].CustomFields, err = customfield.AsRead(held[i]); err != nil {
				return nil, -1, err
			}
		}
		ids[i] = created[i].ID
	}
	if held == nil {
		held = []customfield.Values{created[0].CustomFields}
	}
	if at, err := customfield.ClaimNew(ctx, tx, propertyapi.Contacts, defs, ids, held); err != nil {
		return nil, at, err
	}
	for i := range created {
		created[i].CustomFields = customfield.Render(defs, created[i].CustomFields)
	}
	if len(created) == 1 {
		c := created[0]
		var data any = c
		if encoded != nil {
			raw, err := json.Marshal(c)
			if err != nil {
				return nil, -1, err
			}
			encoded[c.ID], data = raw, outbox.Encoded(raw)
		}
		return created, -1, outbox.Add(ctx, tx, Stream, contacts.ContactCreated, idStr(c.ID), data)
	}
	events, err := importedEvents(created, encoded)
	if err != nil {
		return nil, -1, err
	}
	return created, -1, outbox.AddMany(ctx, tx, Stream, events)
}

// importedEvents are the events of contacts created together (by
// ascending id): one contacts.imported per contacts.ImportEventIDs of them,
// carrying the records, rather than one contact.created each. Webhooks
// stores the same contact.created per contact from it; the stream, the
// relay and every consumer handle one message where they handled a
// hundred, which was about a third of a batch round (docs/benchmarks.md,
// contact batch upsert). encoded, when not nil, gets each contact's JSON
// by id.
func importedEvents(created []contacts.Contact, encoded map[int64][]byte) ([]outbox.Record, error) {
	var events []outbox.Record
	for chunk := range slices.Chunk(created, contacts.ImportEventIDs) {
		data := contacts.ImportedRaw{IDs: make([]int64, len(chunk)), Records: make([]json.RawMessage, len(chunk))}
		for i, c := range chunk {
			raw, err := json.Marshal(c)
			if err != nil {
				return nil, err
			}
			data.IDs[i], data.Records[i] = c.ID, raw
			if encoded != nil {
				encoded[c.ID] = raw
			}
		}
		events = append(events, outbox.Record{Type: contacts.ContactsImported, AggregateID: idStr(data.IDs[0]),
			Data: outbox.Encoded(data.Encoded())})
	}
	return events, nil
}

// insertMany is the INSERT of several contacts: one array per column,
// read back row by row in cs' order (WITH ORDINALITY … ORDER BY n), so
// the serial ids are drawn in that order.
//
// held[i] is what cs[i] holds in custom_fields. The rows come back without
// custom_fields (scanInserted): the caller knows what it wrote there.
func insertMany(ctx context.Context, tx pgx.Tx, cs []contacts.Contact, held []customfield.Values) (pgx.Rows, error) {
	n := len(cs)
	first, last := make([]string, n), make([]string, n)
	email, phone, mobile, job := make([]*string, n), make([]*string, n), make([]*string, n), make([]*string, n)
	street, city, state, zip, country := make([]*string, n), make([]*string, n), make([]*string, n), make([]*string, n), make([]*string, n)
	notes, tags, source := make([]*string, n), make([]*string, n), make([]*string, n)
	status, custom, e164 := make([]string, n), make([]string, n), make([]string, n)
	company, assigned := make([]*int64, n), make([]*int64, n)
	for i, c := range cs {
		raw, err := customfield.Encode(held[i])
		if err != nil {
			return nil, err
		}
		first[i], last[i], email[i], phone[i], mobile[i], job[i] = c.FirstName, c.LastName, c.Email, c.Phone, c.Mobile, c.JobTitle
		street[i], city[i], state[i], zip[i], country[i] = c.AddressStreet, c.AddressCity, c.AddressState, c.AddressZip, c.AddressCountry
		notes[i], tags[i], status[i], source[i], custom[i] = c.Notes, c.Tags, c.Status, c.Source, string(raw)
		company[i], assigned[i] = c.CompanyID, c.AssignedTo
		e164[i] = phoneKey(c.Phone, c.Mobile)
	}
	return tx.Query(ctx, `INSERT INTO contacts (`+insertContactCols+`)
		SELECT first_name, last_name, email, phone, mobile, job_title, company_id, address_street, address_city,
			address_state, address_zip, address_country, notes, tags, status, source, assigned_to, $18, custom_fields::jsonb,
			phone_e164
		FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::bigint[], $8::text[],
			$9::text[], $10::text[], $11::text[], $12::text[], $13::text[], $14::text[], $15::text[], $16::text[],
			$17::bigint[], $19::text[], $20::text[]) WITH ORDINALITY
			AS u (first_name, last_name, email, phone, mobile, job_title, company_id, address_street, address_city,
				address_state, address_zip, address_country, notes, tags, status, source, assigned_to, custom_fields,
				phone_e164, n)
		ORDER BY n
		RETURNING `+insertedCols,
		first, last, email, phone, mobile, job, company, street, city, state, zip, country, notes, tags, status, source,
		assigned, directory.Caller(ctx), custom, e164)
}

// companiesKept takes the companies cs link to FOR KEY SHARE (the lock
// the foreign key check takes), so none goes away before commit, and
// names the first contact whose company does not exist: the failure of
// a multi-row INSERT's foreign key would not say whose it is.
func companiesKept(ctx context.Context, tx pgx.Tx, cs []contacts.Contact) (int, error) {
	var ids []int64
	for _, c := range cs {
		if c.CompanyID != nil {
			ids = append(ids, *c.CompanyID)
		}
	}
	if len(ids) == 0 {
		return -1, nil
	}
	rows, err := tx.Query(ctx, `SELECT id FROM companies WHERE id = ANY($1) ORDER BY id FOR KEY SHARE`, ids)
	if err != nil {
		return -1, err
	}
	found, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return -1, err
	}
	for i, c := range cs {
		if c.CompanyID != nil && !slices.Contains(found, *c.CompanyID) {
			return i, fault.Invalid("company_id", "does not exist")
		}
	}
	return -1, nil
}

// CreateContact inserts a contact and its event.
func (s *Store) CreateContact(ctx context.Context, c contacts.Contact) (contacts.Contact, error) {
	return inTx(ctx, s.db, func(tx pgx.Tx) (contacts.Contact, error) { return insertContact(ctx, tx, c) })
}

// CreateContactOnce inserts a contact at most once per key.
func (s *Store) CreateContactOnce(ctx context.Context, key string, c contacts.Contact) (idempotency.Done[contacts.Contact], error) {
	return insertOnce(ctx, s.db, key, c, insertContact)
}

// lockRow is the row lock an update takes before reading the row it
// patches: FOR NO KEY UPDATE, the lock the UPDATE itself takes, so two
// updates of one row run one after the other while inserts and updates of
// rows referencing it (their foreign key checks take KEY SHARE) are not
// held up, and a company update cannot deadlock against a contact update
// that checks its company_id.
const lockRow = ` FOR NO KEY UPDATE`

// UpdateContact locks the contact, applies the change to the row as
// committed and writes every field back with its event.
func (s *Store) UpdateContact(ctx context.Context, id int64, apply func(*contacts.Contact) error) (contacts.Contact, error) {
	return inTx(ctx, s.db, func(tx pgx.Tx) (contacts.Contact, error) {
		defs, err := hold(ctx, tx, propertyapi.Contacts)
		if err != nil {
			return contacts.Contact{}, err
		}
		c, _, err := updateContact(ctx, tx, defs, id, apply, false)
		return c, err
	})
}

// updateContact is UpdateContact inside tx, whose definitions defs are
// (hold, taken before the row lock). apply gets the values the contact
// holds in CustomFields. With skipUnchanged (a batch), a contact
// apply left as it was is neither written nor published and changed is
// false; a single update always writes, as it always did.
func updateContact(ctx context.Context, tx pgx.Tx, defs []customfield.Definition, id int64, apply func(*contacts.Contact) error,
	skipUnchanged bool) (c contacts.Contact, changed bool, err error) {
	c, err = one(tx, ctx, scanContact, "contact", `SELECT `+contactCols+` FROM contacts WHERE id = $1`+lockRow, id)
	if err != nil {
		return contacts.Contact{}, false, err
	}
	before, err := json.Marshal(c)
	if err != nil {
		return contacts.Contact{}, false, err
	}
	old := c.CustomFields
	if err := apply(&c); err != nil {
		return contacts.Contact{}, false, err
	}
	if after, err := json.Marshal(c); err != nil {
		return contacts.Contact{}, false, err
	} else if skipUnchanged && bytes.Equal(before, after) {
		c.CustomFields = customfield.Render(defs, c.CustomFields)
		return c, false, nil
	}
	if err := customfield.Recheck(ctx, defs, old, contacts.Held(c.CustomFields)); err != nil {
		return contacts.Contact{}, false, err
	}
	updated, err := one(tx, ctx, scanContact, "contact", `UPDATE contacts SET first_name = $2, last_name = $3,
		email = $4, phone = $5, mobile = $6, job_title = $7, company_id = $8, address_street = $9,
		address_city = $10, address_state = $11, address_zip = $12, address_country = $13, notes = $14,
		tags = $15, status = $16, source = $17, assigned_to = $18, custom_fields = $19, phone_e164 = $20, updated_at = now()
		WHERE id = $1 RETURNING `+contactCols,
		c.ID, c.FirstName, c.LastName, c.Email, c.Phone, c.Mobile, c.JobTitle, c.CompanyID, c.AddressStreet,
		c.AddressCity, c.AddressState, c.AddressZip, c.AddressCountry, c.Notes, c.Tags, c.Status, c.Source,
		c.AssignedTo, contacts.Held(c.CustomFields), phoneKey(c.Phone, c.Mobile))
	if err != nil {
		return updated, false, refErr(err)
	}
	if err := claimed(ctx, tx, defs, propertyapi.Contacts, updated.ID, &updated.CustomFields); err != nil {
		return updated, false, err
	}
	return updated, true, outbox.Add(ctx, tx, Stream, contacts.ContactUpdated, idStr(updated.ID), updated)
}

// DeleteContact removes the contact, its notes and tasks, and records the
// deleted record as the event and in the audit log.
func (s *Store) DeleteContact(ctx context.Context, id int64) error {
	return s.db.InTx(ctx, func(tx pgx.Tx) error { return deleteContact(ctx, tx, id) })
}

func deleteContact(ctx context.Context, tx pgx.Tx, id int64) error {
	deleted, err := one(tx, ctx, scanContact, "contact", `DELETE FROM contacts WHERE id = $1 RETURNING `+contactCols, id)
	if err != nil {
		return err
	}
	if err := activity.DeleteAll(ctx, tx, activity.Contact, id); err != nil {
		return err
	}
	if err := customfield.Release(ctx, tx, propertyapi.Contacts, id); err != nil {
		return err
	}
	if err := outbox.Add(ctx, tx, Stream, contacts.ContactDeleted, idStr(id), outbox.Tombstone(deleted.ID)); err != nil {
		return err
	}
	return auditDeleted(ctx, tx, "contact", id)
}

// auditDeleted records the audit log's record.deleted for object id in
// the delete's transaction, whichever path deletes it (a single delete, a
// batch, an erasure): an entry is written if and only if the delete
// commits.
func auditDeleted(ctx context.Context, tx pgx.Tx, object string, id int64) error {
	return audit.Record(ctx, tx, contactsapi.Service, audit.Entry{Action: identityapi.AuditRecordDeleted,
		Object: object, ID: idStr(id), Details: map[string]string{"object": object}})
}

// ContactsByID returns the contacts among ids, by ascending id.
func (s *Store) ContactsByID(ctx context.Context, ids []int64) ([]contacts.Contact, error) {
	rows, err := s.db.Query(ctx, `SELECT `+contactCols+` FROM contacts WHERE id = ANY($1) ORDER BY id`, ids)
	if err != nil {
		return nil, err
	}
	return s.renderedContacts(ctx, rows)
}

// ContactsByEmail matches emails case-insensitively and exactly.
func (s *Store) ContactsByEmail(ctx context.Context, email string) ([]contacts.Contact, error) {
	rows, err := s.db.Query(ctx, `SELECT `+contactCols+` FROM contacts
		WHERE lower(email) = lower($1) AND `+anyStatus+` ORDER BY id`, email)
	if err != nil {
		return nil, err
	}
	return s.renderedContacts(ctx, rows)
}
