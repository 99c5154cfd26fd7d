-- A broad search counts its matches at the speed of a bare (id, text)
-- table (issue 36). The count rechecks every trigram candidate on the
-- heap of the table holding the trigram index, so its cost follows that
-- table's pages: with the list's filtered and sorted columns (016) it read
-- 35,700 pages for 1,000,000 contacts and counted search=smith in
-- 100-120 ms, where (id, search_text) reads 12,300 and counts in 35-50 ms.
-- contact_search now holds only what finds a search's matches: the search
-- text and the company, whose name is the search's other branch (the
-- planner ORs the company index's bitmap with the trigram one). Filters
-- and sorts read contacts: the page walks contacts' sort indexes and
-- checks contacts.search_text on the rows it meets (the store's
-- searched), and a search with other filters counts contacts through the
-- projection's ids.
--
-- contact_search is derived as before: statement triggers with transition
-- tables on every write path. An update writes it only when a contact's
-- search text or company changed, so most edits write nothing here.
DROP TRIGGER contacts_search_truncate ON contacts;
DROP TRIGGER contacts_search_del ON contacts;
DROP TRIGGER contacts_search_upd ON contacts;
DROP TRIGGER contacts_search_ins ON contacts;
DROP FUNCTION contact_search_truncate();
DROP FUNCTION contact_search_del();
DROP FUNCTION contact_search_upd();
DROP FUNCTION contact_search_ins();
DROP TABLE contact_search;

CREATE TABLE contact_search (
    id          bigint PRIMARY KEY,
    company_id  bigint,
    search_text text
);

CREATE FUNCTION contact_search_ins() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO contact_search (id, company_id, search_text) SELECT id, company_id, search_text FROM new_rows;
    RETURN NULL;
END $$;

-- Compared with the projection itself: a write that leaves the search
-- text and the company alone writes nothing here.
CREATE FUNCTION contact_search_upd() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE contact_search s SET company_id = n.company_id, search_text = n.search_text
    FROM new_rows n
    WHERE s.id = n.id AND (s.company_id, s.search_text) IS DISTINCT FROM (n.company_id, n.search_text);
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
-- no write slips between them and this copy. The indexes are built after
-- it, in one pass each. The trigram index keeps its name: the import
-- merges its pending list by it (gin_clean_pending_list).
INSERT INTO contact_search (id, company_id, search_text) SELECT id, company_id, search_text FROM contacts;
CREATE INDEX contacts_search_trgm ON contact_search USING gin (search_text gin_trgm_ops);
CREATE INDEX contact_search_company ON contact_search (company_id);

---- create above / drop below ----

-- Back to 016's projection.
DROP TRIGGER contacts_search_truncate ON contacts;
DROP TRIGGER contacts_search_del ON contacts;
DROP TRIGGER contacts_search_upd ON contacts;
DROP TRIGGER contacts_search_ins ON contacts;
DROP FUNCTION contact_search_truncate();
DROP FUNCTION contact_search_del();
DROP FUNCTION contact_search_upd();
DROP FUNCTION contact_search_ins();
DROP TABLE contact_search;

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

CREATE INDEX contacts_search_trgm ON contact_search USING gin (search_text gin_trgm_ops);
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

INSERT INTO contact_search (id, company_id, assigned_to, created_at, updated_at, status, source, sort_name, email,
    phone, company_name, enums, search_text)
SELECT id, company_id, assigned_to, created_at, updated_at, status, source, sort_name, email,
    phone, company_name, enums, search_text
FROM contacts;
