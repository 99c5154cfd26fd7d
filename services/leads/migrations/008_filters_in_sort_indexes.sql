-- A list's page with many matches is a walk of its sort index (the page
-- follows from the total: docs/decisions.md, "List totals: count cubes").
-- The sort indexes carry the list's equality filters and the creation
-- date, and the page's ids are read from them alone (store.List), so a
-- filter is checked on the index entries by an index-only scan instead of
-- one heap fetch per skipped row: status=contacted sorted by name skipped
-- the 100,000 leads whose names sort first, 330 ms of heap fetches, and an
-- owner with an enum value 150 ms. Expression keys carry the columns they
-- read, so the ORDER BY needs nothing else.
--
-- An enum custom field is filtered on enums: only the lead's enum fields'
-- values, the jsonb the count cube keys leads by (custom_field_enums,
-- customfield's 002), kept by a row trigger on every write path (the API,
-- batches, imports, the intake, plain SQL and the previous release during
-- a rolling deploy). It is exact for the cube's reasons: the definitions
-- cannot change under a record write (customfield.Hold) and a field's
-- values are removed before its definition.
ALTER TABLE leads ADD COLUMN enums jsonb NOT NULL DEFAULT '{}';

CREATE FUNCTION leads_enums() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.enums := custom_field_enums('leads', NEW.custom_fields);
    RETURN NEW;
END $$;
CREATE TRIGGER leads_enums BEFORE INSERT OR UPDATE OF custom_fields, enums ON leads
    FOR EACH ROW EXECUTE FUNCTION leads_enums();

-- enums is derived: history leaves it out, as the other derived columns
-- (007); replaced before the fill below, which so records nothing.
DROP TRIGGER leads_history_ins ON leads;
DROP TRIGGER leads_history_upd ON leads;
DROP TRIGGER leads_history_del ON leads;
SELECT history_track('leads', 'lead', ARRAY['search_text', 'assigned_to_name', 'created_by', 'enums']);
UPDATE leads SET enums = custom_field_enums('leads', custom_fields) WHERE custom_fields <> '{}';

DROP INDEX leads_sort_name;
DROP INDEX leads_sort_email;
DROP INDEX leads_sort_company;
DROP INDEX leads_sort_status;
DROP INDEX leads_sort_source;
DROP INDEX leads_sort_assignee;
DROP INDEX leads_sort_created;
DROP INDEX leads_sort_updated;
CREATE INDEX leads_sort_name ON leads ((lower(first_name || ' ' || last_name)), id)
    INCLUDE (status, source, assigned_to, created_at, enums, first_name, last_name);
CREATE INDEX leads_sort_email ON leads ((lower(email)), id) INCLUDE (status, source, assigned_to, created_at, enums, email);
CREATE INDEX leads_sort_company ON leads ((lower(company)), id) INCLUDE (status, source, assigned_to, created_at, enums, company);
CREATE INDEX leads_sort_status ON leads (status, id) INCLUDE (source, assigned_to, created_at, enums);
CREATE INDEX leads_sort_source ON leads ((lower(source)), id) INCLUDE (status, source, assigned_to, created_at, enums);
CREATE INDEX leads_sort_assignee ON leads ((lower(assigned_to_name)), id)
    INCLUDE (status, source, assigned_to, created_at, enums, assigned_to_name);
CREATE INDEX leads_sort_created ON leads (created_at, id) INCLUDE (status, source, assigned_to, enums);
CREATE INDEX leads_sort_updated ON leads (updated_at, id) INCLUDE (status, source, assigned_to, created_at, enums);

---- create above / drop below ----

DROP INDEX leads_sort_name;
DROP INDEX leads_sort_email;
DROP INDEX leads_sort_company;
DROP INDEX leads_sort_status;
DROP INDEX leads_sort_source;
DROP INDEX leads_sort_assignee;
DROP INDEX leads_sort_created;
DROP INDEX leads_sort_updated;
CREATE INDEX leads_sort_name ON leads ((lower(first_name || ' ' || last_name)), id);
CREATE INDEX leads_sort_email ON leads ((lower(email)), id);
CREATE INDEX leads_sort_company ON leads ((lower(company)), id);
CREATE INDEX leads_sort_status ON leads (status, id);
CREATE INDEX leads_sort_source ON leads ((lower(source)), id);
CREATE INDEX leads_sort_assignee ON leads ((lower(assigned_to_name)), id);
CREATE INDEX leads_sort_created ON leads (created_at, id);
CREATE INDEX leads_sort_updated ON leads (updated_at, id);
DROP TRIGGER leads_history_ins ON leads;
DROP TRIGGER leads_history_upd ON leads;
DROP TRIGGER leads_history_del ON leads;
SELECT history_track('leads', 'lead', ARRAY['search_text', 'assigned_to_name', 'created_by']);
DROP TRIGGER leads_enums ON leads;
DROP FUNCTION leads_enums();
ALTER TABLE leads DROP COLUMN enums;
