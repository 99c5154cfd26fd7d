-- A narrow copy of what a search reads: the trigram text, the list's sort
-- keys and its plain filters (status, source, owner, company, dates), one
-- row per contact, kept by statement triggers in the writing transaction.
-- A broad term (search=smith: 125,000 of 1,000,000 contacts) rechecks
-- every trigram candidate's heap tuple: contacts' rows are wide (addresses,
-- notes, tags, custom_fields), 434 MB at a million rows, more than
-- shared_buffers, so each search read the table from the OS cache; these
-- rows are about half as wide. The list searches here and reads only the
-- page's rows from contacts (store.searchContacts). contacts_search_trgm
-- stays for the previous release during a rolling deploy.
CREATE TABLE contact_search (
    id           bigint PRIMARY KEY,
    search_text  text        NOT NULL,
    sort_name    text        NOT NULL,
    email        text,
    phone        text,
    company_name text,
    company_id   bigint,
    status       text        NOT NULL,
    source       text,
    assigned_to  bigint,
    created_at   timestamptz NOT NULL,
    updated_at   timestamptz NOT NULL
);

CREATE FUNCTION contact_search_ins() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO contact_search (id, search_text, sort_name, email, phone, company_name, company_id, status, source,
        assigned_to, created_at, updated_at)
    SELECT id, search_text, sort_name, email, phone, company_name, company_id, status, source,
        assigned_to, created_at, updated_at
    FROM new_rows;
    RETURN NULL;
END $$;

CREATE FUNCTION contact_search_del() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM contact_search s USING old_rows o WHERE s.id = o.id;
    RETURN NULL;
END $$;

-- An update rewrites the copy only when a copied column changed (a
-- custom-field or address edit writes nothing here).
CREATE FUNCTION contact_search_upd() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE contact_search s SET search_text = n.search_text, sort_name = n.sort_name, email = n.email,
        phone = n.phone, company_name = n.company_name, company_id = n.company_id, status = n.status,
        source = n.source, assigned_to = n.assigned_to, created_at = n.created_at, updated_at = n.updated_at
    FROM new_rows n
    WHERE s.id = n.id AND (s.search_text, s.sort_name, s.email, s.phone, s.company_name, s.company_id, s.status,
        s.source, s.assigned_to, s.created_at, s.updated_at) IS DISTINCT FROM (n.search_text, n.sort_name, n.email,
        n.phone, n.company_name, n.company_id, n.status, n.source, n.assigned_to, n.created_at, n.updated_at);
    RETURN NULL;
END $$;

CREATE FUNCTION contact_search_truncate() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    TRUNCATE contact_search;
    RETURN NULL;
END $$;

CREATE TRIGGER contacts_search_ins AFTER INSERT ON contacts REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION contact_search_ins();
CREATE TRIGGER contacts_search_del AFTER DELETE ON contacts REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION contact_search_del();
CREATE TRIGGER contacts_search_upd AFTER UPDATE ON contacts REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION contact_search_upd();
CREATE TRIGGER contacts_search_truncate AFTER TRUNCATE ON contacts
    FOR EACH STATEMENT EXECUTE FUNCTION contact_search_truncate();

-- Filled after the triggers exist: creating them locks out writers until
-- this migration commits, so no contact is missed or copied twice.
INSERT INTO contact_search (id, search_text, sort_name, email, phone, company_name, company_id, status, source,
    assigned_to, created_at, updated_at)
SELECT id, search_text, sort_name, email, phone, company_name, company_id, status, source,
    assigned_to, created_at, updated_at
FROM contacts;

CREATE INDEX contact_search_trgm ON contact_search USING gin (search_text gin_trgm_ops);

---- create above / drop below ----

DROP TRIGGER contacts_search_truncate ON contacts;
DROP TRIGGER contacts_search_upd ON contacts;
DROP TRIGGER contacts_search_del ON contacts;
DROP TRIGGER contacts_search_ins ON contacts;
DROP FUNCTION contact_search_ins(), contact_search_del(), contact_search_upd(), contact_search_truncate();
DROP TABLE contact_search;
