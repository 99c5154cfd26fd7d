-- Broad searches read a narrow projection of the contact list (issue 36).
-- A search matching 125,000 of 1,000,000 contacts rechecks every trigram
-- candidate on the heap: on contacts, whose rows carry addresses, notes
-- and custom_fields, that read about 62,000 pages where a table of only
-- (id, search_text) reads 12,000. contact_search holds exactly what the
-- list's filters and built-in sorts read, under the same column names, so
-- a search's one-pass query (the store's matched) runs on it unchanged;
-- the page's rows are then read from contacts by id.
--
-- It is derived: statement triggers copy the columns from contacts on
-- every write path (the API, batches, the import's COPY, merges, erasure,
-- a company's rename or deletion through its foreign key, plain SQL and
-- the previous release's replicas during a rolling deploy). Statement
-- triggers with transition tables cost a batch one statement, not one
-- call per row, and share the transition tables the history, count and
-- cube triggers already capture. Nothing is recomputed: search_text and
-- sort_name come from contacts' generated columns, enums from its trigger.
--
-- fillfactor 90 leaves room on each page for the new version of a row, so
-- an update that leaves search_text and company_id alone (most edits,
-- which change updated_at) is a HOT update: no index entry written.
CREATE TABLE contact_search (
    id           bigint      PRIMARY KEY,
    company_id   bigint,
    assigned_to  bigint,
    created_at   timestamptz NOT NULL,
    updated_at   timestamptz NOT NULL,
    status       text        NOT NULL,
    source       text,
    sort_name    text,
    email        text,
    phone        text,
    company_name text,
    enums        jsonb       NOT NULL,
    search_text  text
) WITH (fillfactor = 90);

-- contacts' trigram index moves here, under its name: the import merges
-- its GIN pending list by that name after a COPY (this release's and the
-- previous one's, gin_clean_pending_list('contacts_search_trgm')). Writes
-- pay one trigram index, not two. A previous release's replica still
-- answers searches correctly from contacts.search_text during a rolling
-- deploy, without an index; the column stays until a later contract step.
DROP INDEX contacts_search_trgm;
CREATE INDEX contacts_search_trgm ON contact_search USING gin (search_text gin_trgm_ops);
-- The search's second branch (the contact's company's name matches)
-- finds contacts by company_id; the planner ORs it with the trigram
-- index's bitmap instead of scanning the table.
CREATE INDEX contact_search_company ON contact_search (company_id);

CREATE FUNCTION contact_search_ins() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO contact_search (id, company_id, assigned_to, created_at, updated_at, status, source, sort_name, email,
        phone, company_name, enums, search_text)
    SELECT id, company_id, assigned_to, created_at, updated_at, status, source, sort_name, email,
        phone, company_name, enums, search_text
    FROM new_rows;
    RETURN NULL;
END $$;

-- An update rewrites only the rows whose projected columns changed, compared
-- with the projection itself: a write of columns it does not hold (notes,
-- custom_fields other than enums, phone_e164) writes nothing here.
CREATE FUNCTION contact_search_upd() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE contact_search s SET company_id = n.company_id, assigned_to = n.assigned_to, created_at = n.created_at,
        updated_at = n.updated_at, status = n.status, source = n.source, sort_name = n.sort_name, email = n.email,
        phone = n.phone, company_name = n.company_name, enums = n.enums, search_text = n.search_text
    FROM new_rows n
    WHERE s.id = n.id
        AND (s.company_id, s.assigned_to, s.created_at, s.updated_at, s.status, s.source, s.sort_name, s.email,
            s.phone, s.company_name, s.enums, s.search_text)
        IS DISTINCT FROM (n.company_id, n.assigned_to, n.created_at, n.updated_at, n.status, n.source, n.sort_name, n.email,
            n.phone, n.company_name, n.enums, n.search_text);
    RETURN NULL;
END $$;

CREATE FUNCTION contact_search_del() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM contact_search s USING old_rows o WHERE s.id = o.id;
    RETURN NULL;
END $$;

CREATE FUNCTION contact_search_truncate() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    TRUNCATE contact_search;
    RETURN NULL;
END $$;

CREATE TRIGGER contacts_search_ins AFTER INSERT ON contacts
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION contact_search_ins();
CREATE TRIGGER contacts_search_upd AFTER UPDATE ON contacts
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION contact_search_upd();
CREATE TRIGGER contacts_search_del AFTER DELETE ON contacts
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION contact_search_del();
CREATE TRIGGER contacts_search_truncate AFTER TRUNCATE ON contacts
    FOR EACH STATEMENT EXECUTE FUNCTION contact_search_truncate();

-- The triggers above hold contacts' lock until this migration commits, so
-- no write slips between them and this copy.
INSERT INTO contact_search (id, company_id, assigned_to, created_at, updated_at, status, source, sort_name, email,
    phone, company_name, enums, search_text)
SELECT id, company_id, assigned_to, created_at, updated_at, status, source, sort_name, email,
    phone, company_name, enums, search_text
FROM contacts;

---- create above / drop below ----

DROP TRIGGER contacts_search_truncate ON contacts;
DROP TRIGGER contacts_search_del ON contacts;
DROP TRIGGER contacts_search_upd ON contacts;
DROP TRIGGER contacts_search_ins ON contacts;
DROP FUNCTION contact_search_truncate();
DROP FUNCTION contact_search_del();
DROP FUNCTION contact_search_upd();
DROP FUNCTION contact_search_ins();
DROP TABLE contact_search;
CREATE INDEX contacts_search_trgm ON contacts USING gin (search_text gin_trgm_ops);
