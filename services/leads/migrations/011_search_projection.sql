-- Broad searches read a narrow projection of the lead list (issue 36).
-- A search matching 125,000 of 1,000,000 leads rechecks every trigram
-- candidate on the heap: on leads, whose rows carry notes, tags, the
-- qualification's columns and custom_fields, that is most of the table's
-- pages. lead_search holds exactly what the list's filters and built-in
-- sorts read, under the same column names, so a search's one-pass query
-- (the store's matched) runs on it unchanged; the page's rows are then
-- read from leads by id.
--
-- It is derived: statement triggers copy the columns from leads on every
-- write path (the API, batches and the intake, the import, qualification,
-- merges, erasure, assignee renames, plain SQL and the previous release's
-- replicas during a rolling deploy). Statement triggers with transition
-- tables cost a batch one statement, not one call per row. Nothing is
-- recomputed: search_text is leads' generated column, enums comes from its
-- row trigger (008), both already set when an AFTER trigger runs.
--
-- fillfactor 90 leaves room on each page for the new version of a row, so
-- an update that leaves search_text alone (a status change, an assignee
-- rename) is a HOT update: no index entry written.
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

-- leads' trigram index moves here: writes pay one trigram index, not two.
-- A previous release's replica still answers searches correctly from
-- leads.search_text during a rolling deploy, without an index (a scan of
-- leads per search, slow at scale until the deploy completes); the column
-- stays until a later contract step drops it.
DROP INDEX leads_search;
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

-- An update rewrites only the rows whose projected columns changed,
-- compared with the projection itself: a write of columns it does not hold
-- (notes, the qualification's ids, custom_fields other than enums) writes
-- nothing here.
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

-- The triggers above hold leads' lock until this migration commits, so no
-- write slips between them and this copy.
INSERT INTO lead_search (id, first_name, last_name, email, company, source, status, assigned_to, assigned_to_name,
    created_at, updated_at, enums, search_text)
SELECT id, first_name, last_name, email, company, source, status, assigned_to, assigned_to_name,
    created_at, updated_at, enums, search_text
FROM leads;

---- create above / drop below ----

DROP TRIGGER leads_search_truncate ON leads;
DROP TRIGGER leads_search_del ON leads;
DROP TRIGGER leads_search_upd ON leads;
DROP TRIGGER leads_search_ins ON leads;
DROP FUNCTION lead_search_truncate();
DROP FUNCTION lead_search_del();
DROP FUNCTION lead_search_upd();
DROP FUNCTION lead_search_ins();
DROP TABLE lead_search;
CREATE INDEX leads_search ON leads USING gin (search_text gin_trgm_ops);
