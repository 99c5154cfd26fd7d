-- An enum custom-field filter walked along a sort index is checked on the
-- index entries, as status, source, owner and the creation date are (005,
-- 010), instead of one heap fetch per skipped row. custom_fields cannot be
-- carried by the indexes (every value of every field, a few hundred
-- bytes), so contacts get enums: only their enum fields' values, the same
-- jsonb the count cube keys them by (custom_field_enums, customfield's
-- 002), and the status-led, owner-led and status sort indexes carry it and
-- created_at. A list filters an enum's equality on enums; every other
-- custom-field filter still reads custom_fields. Where the enum correlates
-- with the sort, the skipped rows ran to the owner's 80,000 in a date
-- range: 1.6 s of heap fetches for one page.
--
-- enums is derived, kept by a row trigger on every write path (the API,
-- batches, imports, plain SQL and the previous release during a rolling
-- deploy): an insert, or an update of custom_fields or of enums itself.
-- Its exactness rests on what the cube's does: the definitions cannot
-- change under a record write (customfield.Hold) and a field's values are
-- removed before its definition.
ALTER TABLE contacts ADD COLUMN enums jsonb NOT NULL DEFAULT '{}';

CREATE FUNCTION contacts_enums() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.enums := custom_field_enums('contacts', NEW.custom_fields);
    RETURN NEW;
END $$;
CREATE TRIGGER contacts_enums BEFORE INSERT OR UPDATE OF custom_fields, enums ON contacts
    FOR EACH ROW EXECUTE FUNCTION contacts_enums();

-- The contacts already there. The history triggers are replaced first, so
-- this fill records nothing: enums is derived, left out like the other
-- derived columns (012).
DROP TRIGGER contacts_history_ins ON contacts;
DROP TRIGGER contacts_history_upd ON contacts;
DROP TRIGGER contacts_history_del ON contacts;
SELECT history_track('contacts', 'contact', ARRAY['sort_name', 'search_text', 'company_name', 'created_by', 'phone_e164', 'enums']);
UPDATE contacts SET enums = custom_field_enums('contacts', custom_fields) WHERE custom_fields <> '{}';

DROP INDEX contacts_status_name;
DROP INDEX contacts_status_email;
DROP INDEX contacts_status_phone;
DROP INDEX contacts_status_company;
DROP INDEX contacts_status_created;
DROP INDEX contacts_status_updated;
DROP INDEX contacts_sort_status;
DROP INDEX contacts_assigned_name;
DROP INDEX contacts_assigned_email;
DROP INDEX contacts_assigned_phone;
DROP INDEX contacts_assigned_company;
DROP INDEX contacts_assigned_status;
DROP INDEX contacts_assigned_created;
CREATE INDEX contacts_status_name ON contacts (status, sort_name, id) INCLUDE (source, created_at, enums);
CREATE INDEX contacts_status_email ON contacts (status, lower(email), id) INCLUDE (source, created_at, enums, email);
CREATE INDEX contacts_status_phone ON contacts (status, phone, id) INCLUDE (source, created_at, enums);
CREATE INDEX contacts_status_company ON contacts (status, lower(company_name), id) INCLUDE (source, created_at, enums, company_name);
CREATE INDEX contacts_status_created ON contacts (status, created_at, id) INCLUDE (source, enums);
CREATE INDEX contacts_status_updated ON contacts (status, updated_at, id) INCLUDE (source, created_at, enums);
CREATE INDEX contacts_sort_status ON contacts (status, id) INCLUDE (source, created_at, enums);
CREATE INDEX contacts_assigned_name ON contacts (assigned_to, sort_name, id) INCLUDE (status, source, created_at, enums) WHERE assigned_to IS NOT NULL;
CREATE INDEX contacts_assigned_email ON contacts (assigned_to, lower(email), id) INCLUDE (status, source, created_at, enums, email) WHERE assigned_to IS NOT NULL;
CREATE INDEX contacts_assigned_phone ON contacts (assigned_to, phone, id) INCLUDE (status, source, created_at, enums) WHERE assigned_to IS NOT NULL;
CREATE INDEX contacts_assigned_company ON contacts (assigned_to, lower(company_name), id) INCLUDE (status, source, created_at, enums, company_name) WHERE assigned_to IS NOT NULL;
CREATE INDEX contacts_assigned_status ON contacts (assigned_to, status, id) INCLUDE (source, created_at, enums) WHERE assigned_to IS NOT NULL;
CREATE INDEX contacts_assigned_created ON contacts (assigned_to, created_at, id) INCLUDE (status, source, enums) WHERE assigned_to IS NOT NULL;

---- create above / drop below ----

DROP INDEX contacts_status_name;
DROP INDEX contacts_status_email;
DROP INDEX contacts_status_phone;
DROP INDEX contacts_status_company;
DROP INDEX contacts_status_created;
DROP INDEX contacts_status_updated;
DROP INDEX contacts_sort_status;
DROP INDEX contacts_assigned_name;
DROP INDEX contacts_assigned_email;
DROP INDEX contacts_assigned_phone;
DROP INDEX contacts_assigned_company;
DROP INDEX contacts_assigned_status;
DROP INDEX contacts_assigned_created;
CREATE INDEX contacts_status_name ON contacts (status, sort_name, id) INCLUDE (source);
CREATE INDEX contacts_status_email ON contacts (status, lower(email), id) INCLUDE (source, email);
CREATE INDEX contacts_status_phone ON contacts (status, phone, id) INCLUDE (source);
CREATE INDEX contacts_status_company ON contacts (status, lower(company_name), id) INCLUDE (source, company_name);
CREATE INDEX contacts_status_created ON contacts (status, created_at, id) INCLUDE (source);
CREATE INDEX contacts_status_updated ON contacts (status, updated_at, id) INCLUDE (source);
CREATE INDEX contacts_sort_status ON contacts (status, id);
CREATE INDEX contacts_assigned_name ON contacts (assigned_to, sort_name, id) INCLUDE (status, source, created_at) WHERE assigned_to IS NOT NULL;
CREATE INDEX contacts_assigned_email ON contacts (assigned_to, lower(email), id) INCLUDE (status, source, created_at, email) WHERE assigned_to IS NOT NULL;
CREATE INDEX contacts_assigned_phone ON contacts (assigned_to, phone, id) INCLUDE (status, source, created_at) WHERE assigned_to IS NOT NULL;
CREATE INDEX contacts_assigned_company ON contacts (assigned_to, lower(company_name), id) INCLUDE (status, source, created_at, company_name) WHERE assigned_to IS NOT NULL;
CREATE INDEX contacts_assigned_status ON contacts (assigned_to, status, id) INCLUDE (source, created_at) WHERE assigned_to IS NOT NULL;
CREATE INDEX contacts_assigned_created ON contacts (assigned_to, created_at, id) INCLUDE (status, source) WHERE assigned_to IS NOT NULL;
DROP TRIGGER contacts_history_ins ON contacts;
DROP TRIGGER contacts_history_upd ON contacts;
DROP TRIGGER contacts_history_del ON contacts;
SELECT history_track('contacts', 'contact', ARRAY['sort_name', 'search_text', 'company_name', 'created_by', 'phone_e164']);
DROP TRIGGER contacts_enums ON contacts;
DROP FUNCTION contacts_enums();
ALTER TABLE contacts DROP COLUMN enums;
