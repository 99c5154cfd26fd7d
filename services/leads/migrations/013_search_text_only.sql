-- A broad search counts its matches at the speed of a bare (id, text)
-- table (issue 36). The count's bitmap heap scan rechecks every trigram
-- candidate on the heap of the table holding the trigram index, so it
-- reads every page of that table: with the list's filtered and sorted
-- columns (011) a count of search=smith (125,000 of 1,000,000 leads) was
-- about 3x what it is over (id, search_text). lead_search now holds only
-- the search text. Filters and sorts are read from leads: the page walks
-- leads' sort indexes and checks leads.search_text on the rows it meets
-- (the store's List), and a search with other filters counts leads
-- through the ids the projection's index finds.
--
-- lead_search is derived as before: statement triggers with transition
-- tables on every write path, one statement per batch. An update writes
-- it only for the leads whose search text changed (a status, owner or
-- notes edit writes nothing here). Default fillfactor: a row is rewritten
-- only when its search text changes, and that is never a HOT update, the
-- trigram index covering the changed column.
DROP TRIGGER leads_search_truncate ON leads;
DROP TRIGGER leads_search_del ON leads;
DROP TRIGGER leads_search_upd ON leads;
DROP TRIGGER leads_search_ins ON leads;
DROP FUNCTION lead_search_truncate();
DROP FUNCTION lead_search_del();
DROP FUNCTION lead_search_upd();
DROP FUNCTION lead_search_ins();
DROP TABLE lead_search;

CREATE TABLE lead_search (
    id          bigint PRIMARY KEY,
    search_text text
);

CREATE FUNCTION lead_search_ins() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO lead_search (id, search_text) SELECT id, search_text FROM new_rows;
    RETURN NULL;
END $$;

-- The old and new versions of each updated lead, compared: only a changed
-- search text is written.
CREATE FUNCTION lead_search_upd() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE lead_search s SET search_text = n.search_text
    FROM new_rows n JOIN old_rows o ON o.id = n.id
    WHERE s.id = n.id AND n.search_text IS DISTINCT FROM o.search_text;
    RETURN NULL;
END $$;

CREATE FUNCTION lead_search_del() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM lead_search s USING old_rows o WHERE s.id = o.id;
    RETURN NULL;
END $$;

CREATE FUNCTION lead_search_truncate() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    TRUNCATE lead_search;
    RETURN NULL;
END $$;

CREATE TRIGGER leads_search_ins AFTER INSERT ON leads
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION lead_search_ins();
CREATE TRIGGER leads_search_upd AFTER UPDATE ON leads
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION lead_search_upd();
CREATE TRIGGER leads_search_del AFTER DELETE ON leads
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION lead_search_del();
CREATE TRIGGER leads_search_truncate AFTER TRUNCATE ON leads
    FOR EACH STATEMENT EXECUTE FUNCTION lead_search_truncate();

-- The triggers above hold leads' lock until this migration commits, so no
-- write slips between them and this copy. The trigram index is built
-- after it, in one pass.
INSERT INTO lead_search (id, search_text) SELECT id, search_text FROM leads;
CREATE INDEX lead_search_trgm ON lead_search USING gin (search_text gin_trgm_ops);

---- create above / drop below ----

-- Back to 011's projection.
DROP TRIGGER leads_search_truncate ON leads;
DROP TRIGGER leads_search_del ON leads;
DROP TRIGGER leads_search_upd ON leads;
DROP TRIGGER leads_search_ins ON leads;
DROP FUNCTION lead_search_truncate();
DROP FUNCTION lead_search_del();
DROP FUNCTION lead_search_upd();
DROP FUNCTION lead_search_ins();
DROP TABLE lead_search;

CREATE TABLE lead_search (
    id               bigint      PRIMARY KEY,
    first_name       text        NOT NULL,
    last_name        text        NOT NULL,
    email            text,
    company          text,
    source           text,
    status           text        NOT NULL,
    assigned_to      bigint,
    assigned_to_name text,
    created_at       timestamptz NOT NULL,
    updated_at       timestamptz NOT NULL,
    enums            jsonb       NOT NULL,
    search_text      text
) WITH (fillfactor = 90);

CREATE INDEX lead_search_trgm ON lead_search USING gin (search_text gin_trgm_ops);

CREATE FUNCTION lead_search_ins() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO lead_search (id, first_name, last_name, email, company, source, status, assigned_to, assigned_to_name,
        created_at, updated_at, enums, search_text)
    SELECT id, first_name, last_name, email, company, source, status, assigned_to, assigned_to_name,
        created_at, updated_at, enums, search_text
    FROM new_rows;
    RETURN NULL;
END $$;

CREATE FUNCTION lead_search_upd() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE lead_search s SET first_name = n.first_name, last_name = n.last_name, email = n.email, company = n.company,
        source = n.source, status = n.status, assigned_to = n.assigned_to, assigned_to_name = n.assigned_to_name,
        created_at = n.created_at, updated_at = n.updated_at, enums = n.enums, search_text = n.search_text
    FROM new_rows n
    WHERE s.id = n.id
        AND (s.first_name, s.last_name, s.email, s.company, s.source, s.status, s.assigned_to, s.assigned_to_name,
            s.created_at, s.updated_at, s.enums, s.search_text)
        IS DISTINCT FROM (n.first_name, n.last_name, n.email, n.company, n.source, n.status, n.assigned_to,
            n.assigned_to_name, n.created_at, n.updated_at, n.enums, n.search_text);
    RETURN NULL;
END $$;

CREATE FUNCTION lead_search_del() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM lead_search s USING old_rows o WHERE s.id = o.id;
    RETURN NULL;
END $$;

CREATE FUNCTION lead_search_truncate() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    TRUNCATE lead_search;
    RETURN NULL;
END $$;

CREATE TRIGGER leads_search_ins AFTER INSERT ON leads
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION lead_search_ins();
CREATE TRIGGER leads_search_upd AFTER UPDATE ON leads
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION lead_search_upd();
CREATE TRIGGER leads_search_del AFTER DELETE ON leads
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION lead_search_del();
CREATE TRIGGER leads_search_truncate AFTER TRUNCATE ON leads
    FOR EACH STATEMENT EXECUTE FUNCTION lead_search_truncate();

INSERT INTO lead_search (id, first_name, last_name, email, company, source, status, assigned_to, assigned_to_name,
    created_at, updated_at, enums, search_text)
SELECT id, first_name, last_name, email, company, source, status, assigned_to, assigned_to_name,
    created_at, updated_at, enums, search_text
FROM leads;
