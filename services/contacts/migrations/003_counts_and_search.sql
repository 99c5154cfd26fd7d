-- Performance at a million contacts (issue 3, docs/benchmarks-contacts.md).

-- 1. Exact totals without count(*). contact_counts holds signed deltas per
-- (dimension, value): dim '' is every contact, then one dimension per
-- single-equality list filter (status, source, assigned_to, company_id).
-- Statement-level triggers append one aggregated delta row per key a
-- statement changed, so writers never wait on each other for a hot
-- counter row; a reader sums the few rows of its key, and
-- contact_counts_compact() (run by the service every minute) folds them.
-- The triggers see every write path, including the FK's ON DELETE SET NULL.
CREATE TABLE contact_counts (
    dim text   NOT NULL,
    val text   NOT NULL,
    n   bigint NOT NULL
);
CREATE INDEX contact_counts_key ON contact_counts (dim, val);

CREATE FUNCTION contact_counts_ins() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO contact_counts (dim, val, n)
    SELECT k.dim, k.val, count(*) FROM new_rows r,
        LATERAL (VALUES ('', ''), ('status', r.status), ('source', r.source),
            ('assigned_to', r.assigned_to::text), ('company_id', r.company_id::text)) k (dim, val)
    WHERE k.val IS NOT NULL GROUP BY k.dim, k.val;
    RETURN NULL;
END $$;

CREATE FUNCTION contact_counts_del() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO contact_counts (dim, val, n)
    SELECT k.dim, k.val, -count(*) FROM old_rows r,
        LATERAL (VALUES ('', ''), ('status', r.status), ('source', r.source),
            ('assigned_to', r.assigned_to::text), ('company_id', r.company_id::text)) k (dim, val)
    WHERE k.val IS NOT NULL GROUP BY k.dim, k.val;
    RETURN NULL;
END $$;

-- An update moves rows between keys; a company rename (which rewrites
-- company_name only) nets to zero and writes nothing.
CREATE FUNCTION contact_counts_upd() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO contact_counts (dim, val, n)
    SELECT k.dim, k.val, sum(r.d) FROM (
            SELECT 1 AS d, status, source, assigned_to, company_id FROM new_rows
            UNION ALL
            SELECT -1, status, source, assigned_to, company_id FROM old_rows) r,
        LATERAL (VALUES ('status', r.status), ('source', r.source),
            ('assigned_to', r.assigned_to::text), ('company_id', r.company_id::text)) k (dim, val)
    WHERE k.val IS NOT NULL GROUP BY k.dim, k.val HAVING sum(r.d) <> 0;
    RETURN NULL;
END $$;

CREATE FUNCTION contact_counts_truncate() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM contact_counts;
    RETURN NULL;
END $$;

CREATE TRIGGER contacts_count_ins AFTER INSERT ON contacts
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION contact_counts_ins();
CREATE TRIGGER contacts_count_del AFTER DELETE ON contacts
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION contact_counts_del();
CREATE TRIGGER contacts_count_upd AFTER UPDATE ON contacts
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION contact_counts_upd();
CREATE TRIGGER contacts_count_truncate AFTER TRUNCATE ON contacts
    FOR EACH STATEMENT EXECUTE FUNCTION contact_counts_truncate();

-- The triggers above already hold contacts' lock, so no write can slip
-- between them and this initial count.
INSERT INTO contact_counts (dim, val, n)
SELECT k.dim, k.val, count(*) FROM contacts r,
    LATERAL (VALUES ('', ''), ('status', r.status), ('source', r.source),
        ('assigned_to', r.assigned_to::text), ('company_id', r.company_id::text)) k (dim, val)
WHERE k.val IS NOT NULL GROUP BY k.dim, k.val;

-- contact_counts_compact folds each key's deltas into one row. It deletes
-- only the rows its snapshot sees, so deltas committed meanwhile survive,
-- and readers see either the old rows or the folded one.
CREATE FUNCTION contact_counts_compact() RETURNS void LANGUAGE sql AS $$
    WITH gone AS (
        DELETE FROM contact_counts c USING (
            SELECT dim, val FROM contact_counts GROUP BY dim, val HAVING count(*) > 1) k
        WHERE c.dim = k.dim AND c.val = k.val
        RETURNING c.dim, c.val, c.n)
    INSERT INTO contact_counts (dim, val, n)
    SELECT dim, val, sum(n) FROM gone GROUP BY dim, val HAVING sum(n) <> 0;
$$;

-- 2. Search. company_name leaves the contact's trigram text: a term found
-- in a company name ("company 77") used to match through the trigrams of
-- most contacts. The list now ORs the contact's own fields with
-- company_id = ANY(companies whose name matches, from this small index).
CREATE INDEX companies_lower_name_trgm ON companies USING gin (lower(name) gin_trgm_ops);
ALTER TABLE contacts DROP COLUMN search_text;
ALTER TABLE contacts ADD COLUMN search_text text GENERATED ALWAYS AS (lower(first_name || ' ' || last_name || E'\n' ||
    coalesce(email, '') || E'\n' || coalesce(phone, '') || E'\n' || coalesce(mobile, ''))) STORED;
CREATE INDEX contacts_search_trgm ON contacts USING gin (search_text gin_trgm_ops);

-- 3. Owner filters (assigned_to, scope=me, scope=team) with every sort key:
-- a short scan of one (assigned_to, key, id) index instead of walking the
-- whole sort index past other owners' rows. Partial, because unassigned
-- rows are never asked for by owner (and imports are unassigned).
DROP INDEX contacts_assigned;
CREATE INDEX contacts_assigned_name ON contacts (assigned_to, sort_name, id) WHERE assigned_to IS NOT NULL;
CREATE INDEX contacts_assigned_email ON contacts (assigned_to, lower(email), id) WHERE assigned_to IS NOT NULL;
CREATE INDEX contacts_assigned_phone ON contacts (assigned_to, phone, id) WHERE assigned_to IS NOT NULL;
CREATE INDEX contacts_assigned_company ON contacts (assigned_to, lower(company_name), id) WHERE assigned_to IS NOT NULL;
CREATE INDEX contacts_assigned_status ON contacts (assigned_to, status, id) WHERE assigned_to IS NOT NULL;
CREATE INDEX contacts_assigned_created ON contacts (assigned_to, created_at, id) WHERE assigned_to IS NOT NULL;
-- (lower(email), id) already answers lower(email) = x.
DROP INDEX contacts_lower_email;

-- 4. Bulk import resolves company names itself (in the same transaction,
-- with the companies share-locked) and writes company_name with the row,
-- announcing it with SET LOCAL contacts.bulk_company_name = 'on'; the
-- per-row lookup, a third of an import's time, then does not run.
DROP TRIGGER contacts_company_name ON contacts;
CREATE TRIGGER contacts_company_name_ins BEFORE INSERT ON contacts FOR EACH ROW
    WHEN (current_setting('contacts.bulk_company_name', true) IS DISTINCT FROM 'on')
    EXECUTE FUNCTION contacts_set_company_name();
CREATE TRIGGER contacts_company_name_upd BEFORE UPDATE OF company_id ON contacts
    FOR EACH ROW EXECUTE FUNCTION contacts_set_company_name();

---- create above / drop below ----

DROP TRIGGER contacts_company_name_ins ON contacts;
DROP TRIGGER contacts_company_name_upd ON contacts;
CREATE TRIGGER contacts_company_name BEFORE INSERT OR UPDATE OF company_id ON contacts
    FOR EACH ROW EXECUTE FUNCTION contacts_set_company_name();
CREATE INDEX contacts_lower_email ON contacts (lower(email));
DROP INDEX contacts_assigned_name;
DROP INDEX contacts_assigned_email;
DROP INDEX contacts_assigned_phone;
DROP INDEX contacts_assigned_company;
DROP INDEX contacts_assigned_status;
DROP INDEX contacts_assigned_created;
CREATE INDEX contacts_assigned ON contacts (assigned_to);
ALTER TABLE contacts DROP COLUMN search_text;
ALTER TABLE contacts ADD COLUMN search_text text GENERATED ALWAYS AS (lower(first_name || ' ' || last_name || E'\n' ||
    coalesce(email, '') || E'\n' || coalesce(phone, '') || E'\n' || coalesce(mobile, '') || E'\n' ||
    coalesce(company_name, ''))) STORED;
CREATE INDEX contacts_search_trgm ON contacts USING gin (search_text gin_trgm_ops);
DROP INDEX companies_lower_name_trgm;
DROP TRIGGER contacts_count_truncate ON contacts;
DROP TRIGGER contacts_count_upd ON contacts;
DROP TRIGGER contacts_count_del ON contacts;
DROP TRIGGER contacts_count_ins ON contacts;
DROP FUNCTION contact_counts_compact();
DROP FUNCTION contact_counts_truncate();
DROP FUNCTION contact_counts_upd();
DROP FUNCTION contact_counts_del();
DROP FUNCTION contact_counts_ins();
DROP TABLE contact_counts;
