-- Exact totals of any combination of the list's equality filters (status,
-- source, owner, enum custom fields), with or without a date range, from a
-- count cube (pkg/list/cube): how many contacts hold each combination, at
-- three grains of their creation day (UTC): all time, month, day. A list
-- sums the few rows its filter matches instead of counting the matching
-- contacts. As contact_counts (003), statement triggers append signed
-- deltas, so concurrent writers never wait on a hot row, and
-- contact_cube_compact() folds them. contact_counts stays maintained for
-- the previous release's replicas during a rolling deploy.
CREATE TABLE contact_cube (
    grain       "char" NOT NULL,
    period      date   NOT NULL,
    status      text   NOT NULL,
    source      text   NOT NULL,  -- '' for none: no NULLs, so keys join by =
    assigned_to bigint NOT NULL,  -- 0 for unassigned
    enums       jsonb  NOT NULL,
    n           bigint NOT NULL
);
CREATE INDEX contact_cube_period ON contact_cube (grain, period);

-- contact_cube_add appends the deltas, one row per key.
CREATE FUNCTION contact_cube_add(delta contact_cube[]) RETURNS void LANGUAGE sql AS $$
    INSERT INTO contact_cube (grain, period, status, source, assigned_to, enums, n)
    SELECT grain, period, status, source, assigned_to, enums, sum(n) FROM unnest(delta)
    GROUP BY grain, period, status, source, assigned_to, enums HAVING sum(n) <> 0;
$$;

-- contact_cube_rows are a contact's three cube keys (all time, its month,
-- its day), each counting sign.
CREATE FUNCTION contact_cube_rows(sign bigint, status text, source text, assigned_to bigint,
        custom_fields jsonb, created_at timestamptz) RETURNS SETOF contact_cube LANGUAGE sql STABLE AS $$
    SELECT g.grain, g.period, status, coalesce(source, ''), coalesce(assigned_to, 0),
        custom_field_enums('contacts', custom_fields), sign
    FROM (SELECT (created_at AT TIME ZONE 'UTC')::date AS day) d,
        LATERAL (VALUES ('a'::"char", '-infinity'::date), ('m', date_trunc('month', d.day)::date), ('d', d.day)) g (grain, period);
$$;

CREATE FUNCTION contact_cube_ins() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM contact_cube_add(ARRAY(SELECT k FROM new_rows r,
        LATERAL contact_cube_rows(1, r.status, r.source, r.assigned_to, r.custom_fields, r.created_at) k));
    RETURN NULL;
END $$;

CREATE FUNCTION contact_cube_del() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM contact_cube_add(ARRAY(SELECT k FROM old_rows r,
        LATERAL contact_cube_rows(-1, r.status, r.source, r.assigned_to, r.custom_fields, r.created_at) k));
    RETURN NULL;
END $$;

-- An update moves rows between keys; one that changes no key (a rename, a
-- note) nets to zero and writes nothing.
CREATE FUNCTION contact_cube_upd() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM contact_cube_add(ARRAY(
        SELECT k FROM new_rows r, LATERAL contact_cube_rows(1, r.status, r.source, r.assigned_to, r.custom_fields, r.created_at) k
        UNION ALL
        SELECT k FROM old_rows r, LATERAL contact_cube_rows(-1, r.status, r.source, r.assigned_to, r.custom_fields, r.created_at) k));
    RETURN NULL;
END $$;

CREATE FUNCTION contact_cube_truncate() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM contact_cube;
    RETURN NULL;
END $$;

CREATE TRIGGER contacts_cube_ins AFTER INSERT ON contacts
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION contact_cube_ins();
CREATE TRIGGER contacts_cube_del AFTER DELETE ON contacts
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION contact_cube_del();
CREATE TRIGGER contacts_cube_upd AFTER UPDATE ON contacts
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION contact_cube_upd();
CREATE TRIGGER contacts_cube_truncate AFTER TRUNCATE ON contacts
    FOR EACH STATEMENT EXECUTE FUNCTION contact_cube_truncate();

-- The triggers above hold contacts' lock: no write slips between them and
-- this initial count.
SELECT contact_cube_add(ARRAY(SELECT k FROM contacts r,
    LATERAL contact_cube_rows(1, r.status, r.source, r.assigned_to, r.custom_fields, r.created_at) k));

-- contact_cube_compact folds each key's deltas into one row. It deletes
-- only the rows its snapshot sees, so deltas committed meanwhile survive,
-- and readers see either the old rows or the folded one.
CREATE FUNCTION contact_cube_compact() RETURNS void LANGUAGE sql AS $$
    WITH gone AS (
        DELETE FROM contact_cube c USING (
            SELECT grain, period, status, source, assigned_to, enums FROM contact_cube
            GROUP BY grain, period, status, source, assigned_to, enums HAVING count(*) > 1) k
        WHERE c.grain = k.grain AND c.period = k.period AND c.status = k.status AND c.source = k.source
            AND c.assigned_to = k.assigned_to AND c.enums = k.enums
        RETURNING c.*)
    INSERT INTO contact_cube (grain, period, status, source, assigned_to, enums, n)
    SELECT grain, period, status, source, assigned_to, enums, sum(n) FROM gone
    GROUP BY grain, period, status, source, assigned_to, enums HAVING sum(n) <> 0;
$$;

---- create above / drop below ----

DROP TRIGGER contacts_cube_ins ON contacts;
DROP TRIGGER contacts_cube_del ON contacts;
DROP TRIGGER contacts_cube_upd ON contacts;
DROP TRIGGER contacts_cube_truncate ON contacts;
DROP FUNCTION contact_cube_compact(), contact_cube_ins(), contact_cube_del(), contact_cube_upd(), contact_cube_truncate();
DROP FUNCTION contact_cube_rows(bigint, text, text, bigint, jsonb, timestamptz);
DROP FUNCTION contact_cube_add(contact_cube[]);
DROP TABLE contact_cube;
