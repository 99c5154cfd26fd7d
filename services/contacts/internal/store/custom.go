package store

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/opencrm/crm/pkg/contract/propertyapi"
	"github.com/opencrm/crm/pkg/customfield"
	"github.com/opencrm/crm/pkg/db"
	"github.com/opencrm/crm/services/contacts/internal/contacts"
)

// Custom fields: a record's custom_fields column holds only its non-empty
// values (customfield.Values); what the API reads, and events carry, is
// customfield.Render of them: every defined name, null where empty.

// cf is the record tables' custom_fields column in list queries.
const cf = customfield.Column("custom_fields")

// hold takes object's definitions for a transaction that writes values
// (customfield.Hold: none changes or goes away until commit). A write
// takes it before locking a record: a definition change locks records
// under its own lock.
func hold(ctx context.Context, tx pgx.Tx, object string) ([]customfield.Definition, error) {
	return customfield.Hold(ctx, tx, object)
}

// claimed keeps the unique values a record just written holds claimed
// (409 duplicate_value when another holds one) and turns *values (what
// it holds) into what it reads as.
func claimed(ctx context.Context, tx pgx.Tx, defs []customfield.Definition, object string, id int64, values *map[string]any) error {
	if err := customfield.Claim(ctx, tx, object, id, defs, *values); err != nil {
		return err
	}
	*values = customfield.Render(defs, *values)
	return nil
}

// renderIn turns each of values (what records of object hold) into what
// it reads as, with the definitions q sees.
func renderIn(ctx context.Context, q db.Querier, object string, values ...*map[string]any) error {
	defs, err := customfield.Definitions(ctx, q, object)
	if err != nil {
		return err
	}
	for _, v := range values {
		*v = customfield.Render(defs, *v)
	}
	return nil
}

// renderSQL is the SQL of a record's custom_fields as it reads, for the
// events bulk writes build in SQL: every definition of object with the
// record's value or null.
func renderSQL(object string) string {
	return `coalesce((SELECT jsonb_object_agg(d.name, custom_fields -> d.name) FROM custom_field_definitions d
		WHERE d.object = '` + object + `'), '{}'::jsonb)`
}

// renderContacts renders the contacts' custom fields.
func (s *Store) renderContacts(ctx context.Context, cs ...*contacts.Contact) error {
	values := make([]*map[string]any, len(cs))
	for i, c := range cs {
		values[i] = &c.CustomFields
	}
	return renderIn(ctx, s.db, propertyapi.Contacts, values...)
}

// renderedContacts collects rows of contactCols, rendered.
func (s *Store) renderedContacts(ctx context.Context, rows pgx.Rows) ([]contacts.Contact, error) {
	list, err := collect(rows, scanContact)
	if err != nil {
		return nil, err
	}
	return list, s.renderList(ctx, list)
}

// renderList renders a list of contacts in place.
func (s *Store) renderList(ctx context.Context, list []contacts.Contact) error {
	ps := make([]*contacts.Contact, len(list))
	for i := range list {
		ps[i] = &list[i]
	}
	return s.renderContacts(ctx, ps...)
}

// renderCompanies renders the companies' custom fields.
func (s *Store) renderCompanies(ctx context.Context, cs ...*contacts.Company) error {
	values := make([]*map[string]any, len(cs))
	for i, c := range cs {
		values[i] = &c.CustomFields
	}
	return renderIn(ctx, s.db, propertyapi.Companies, values...)
}

// renderCompanyList renders a list of companies in place.
func (s *Store) renderCompanyList(ctx context.Context, list []contacts.Company) error {
	ps := make([]*contacts.Company, len(list))
	for i := range list {
		ps[i] = &list[i]
	}
	return s.renderCompanies(ctx, ps...)
}
