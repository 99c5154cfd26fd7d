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

-- The three triggers share one shape: each contact (r, with its sign d) is
-- keyed once (the MATERIALIZED CTE reads its enums once, not per grain),
-- then counted under its three grains; keys netting to zero (an update
-- that changes no dimension, a rename) write nothing.
CREATE FUNCTION contact_cube_ins() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    WITH r AS MATERIALIZED (
        SELECT status, coalesce(source, '') AS source, coalesce(assigned_to, 0) AS assigned_to,
            custom_field_enums('contacts', custom_fields) AS enums, (created_at AT TIME ZONE 'UTC')::date AS day
        FROM new_rows)
    INSERT INTO contact_cube (grain, period, status, source, assigned_to, enums, n)
    SELECT g.grain, g.period, r.status, r.source, r.assigned_to, r.enums, count(*)
    FROM r, LATERAL (VALUES ('a'::"char", '-infinity'::date), ('m', date_trunc('month', r.day)::date), ('d', r.day)) g (grain, period)
    GROUP BY g.grain, g.period, r.status, r.source, r.assigned_to, r.enums;
    RETURN NULL;
END $$;

CREATE FUNCTION contact_cube_del() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    WITH r AS MATERIALIZED (
        SELECT status, coalesce(source, '') AS source, coalesce(assigned_to, 0) AS assigned_to,
            custom_field_enums('contacts', custom_fields) AS enums, (created_at AT TIME ZONE 'UTC')::date AS day
        FROM old_rows)
    INSERT INTO contact_cube (grain, period, status, source, assigned_to, enums, n)
    SELECT g.grain, g.period, r.status, r.source, r.assigned_to, r.enums, -count(*)
    FROM r, LATERAL (VALUES ('a'::"char", '-infinity'::date), ('m', date_trunc('month', r.day)::date), ('d', r.day)) g (grain, period)
    GROUP BY g.grain, g.period, r.status, r.source, r.assigned_to, r.enums;
    RETURN NULL;
END $$;

-- An update moves contacts between keys. Transition tables rule out an
-- UPDATE OF column list, so every update runs this; one that changes no
-- dimension (a rename, a note, a company's new name) nets to zero and writes nothing.
CREATE FUNCTION contact_cube_upd() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    WITH r AS MATERIALIZED (
        SELECT 1 AS d, status, coalesce(source, '') AS source, coalesce(assigned_to, 0) AS assigned_to,
            custom_field_enums('contacts', custom_fields) AS enums, (created_at AT TIME ZONE 'UTC')::date AS day
        FROM new_rows
        UNION ALL
        SELECT -1, status, coalesce(source, ''), coalesce(assigned_to, 0),
            custom_field_enums('contacts', custom_fields), (created_at AT TIME ZONE 'UTC')::date
        FROM old_rows)
    INSERT INTO contact_cube (grain, period, status, source, assigned_to, enums, n)
    SELECT g.grain, g.period, r.status, r.source, r.assigned_to, r.enums, sum(r.d)
    FROM r, LATERAL (VALUES ('a'::"char", '-infinity'::date), ('m', date_trunc('month', r.day)::date), ('d', r.day)) g (grain, period)
    GROUP BY g.grain, g.period, r.status, r.source, r.assigned_to, r.enums HAVING sum(r.d) <> 0;
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

-- contact_cube_recount counts the cube again from the contacts (a repair after
-- writes made with its triggers disabled); the caller holds a lock that
-- keeps writes out. The migration runs it for the contacts already there:
-- the triggers above hold contacts' lock, so no write slips between them.
CREATE FUNCTION contact_cube_recount() RETURNS void LANGUAGE sql AS $$
    DELETE FROM contact_cube;
    WITH r AS MATERIALIZED (
        SELECT status, coalesce(source, '') AS source, coalesce(assigned_to, 0) AS assigned_to,
            custom_field_enums('contacts', custom_fields) AS enums, (created_at AT TIME ZONE 'UTC')::date AS day
        FROM contacts)
    INSERT INTO contact_cube (grain, period, status, source, assigned_to, enums, n)
    SELECT g.grain, g.period, r.status, r.source, r.assigned_to, r.enums, count(*)
    FROM r, LATERAL (VALUES ('a'::"char", '-infinity'::date), ('m', date_trunc('month', r.day)::date), ('d', r.day)) g (grain, period)
    GROUP BY g.grain, g.period, r.status, r.source, r.assigned_to, r.enums;
$$;
SELECT contact_cube_recount();

-- contact_cube_compact folds each key's deltas into one row. It deletes only
-- the rows its snapshot sees, so deltas committed meanwhile survive, and
-- readers see either the old rows or the folded one.
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
DROP FUNCTION contact_cube_recount(), contact_cube_compact(), contact_cube_ins(), contact_cube_del(), contact_cube_upd(), contact_cube_truncate();
DROP TABLE contact_cube;
