-- Exact totals of any combination of the list's equality filters (status,
-- source, owner, enum custom fields), with or without a date range, from a
-- count cube (pkg/list/cube): how many leads hold each combination, at
-- three grains of their creation day (UTC): all time, month, day. A list
-- sums the few rows its filter matches instead of counting the matching
-- leads. As lead_count_deltas (002), statement triggers append signed
-- deltas, so concurrent writers never wait on a hot row, and
-- lead_cube_compact() (run with the counter's compaction) folds them.
-- lead_count_deltas stays maintained for the previous release's replicas
-- during a rolling deploy. Needs custom_field_enums (customfield's 002),
-- whose migrations run before this set.
CREATE TABLE lead_cube (
    grain       "char" NOT NULL,
    period      date   NOT NULL,
    status      text   NOT NULL,
    source      text   NOT NULL,  -- '' for none: no NULLs, so keys join by =
    assigned_to bigint NOT NULL,  -- 0 for unassigned
    enums       jsonb  NOT NULL,
    n           bigint NOT NULL
);
CREATE INDEX lead_cube_period ON lead_cube (grain, period);

-- The three triggers share one shape: each lead (r, with its sign d) is
-- keyed once (the MATERIALIZED CTE reads its enums once, not per grain),
-- then counted under its three grains; keys netting to zero (an update
-- that changes no dimension, a rename) write nothing.
CREATE FUNCTION lead_cube_ins() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    WITH r AS MATERIALIZED (
        SELECT status, coalesce(source, '') AS source, coalesce(assigned_to, 0) AS assigned_to,
            custom_field_enums('leads', custom_fields) AS enums, (created_at AT TIME ZONE 'UTC')::date AS day
        FROM new_rows)
    INSERT INTO lead_cube (grain, period, status, source, assigned_to, enums, n)
    SELECT g.grain, g.period, r.status, r.source, r.assigned_to, r.enums, count(*)
    FROM r, LATERAL (VALUES ('a'::"char", '-infinity'::date), ('m', date_trunc('month', r.day)::date), ('d', r.day)) g (grain, period)
    GROUP BY g.grain, g.period, r.status, r.source, r.assigned_to, r.enums;
    RETURN NULL;
END $$;

CREATE FUNCTION lead_cube_del() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    WITH r AS MATERIALIZED (
        SELECT status, coalesce(source, '') AS source, coalesce(assigned_to, 0) AS assigned_to,
            custom_field_enums('leads', custom_fields) AS enums, (created_at AT TIME ZONE 'UTC')::date AS day
        FROM old_rows)
    INSERT INTO lead_cube (grain, period, status, source, assigned_to, enums, n)
    SELECT g.grain, g.period, r.status, r.source, r.assigned_to, r.enums, -count(*)
    FROM r, LATERAL (VALUES ('a'::"char", '-infinity'::date), ('m', date_trunc('month', r.day)::date), ('d', r.day)) g (grain, period)
    GROUP BY g.grain, g.period, r.status, r.source, r.assigned_to, r.enums;
    RETURN NULL;
END $$;

-- An update moves leads between keys. Transition tables rule out an
-- UPDATE OF column list, so every update runs this; one that changes no
-- dimension (notes, an assignee rename) nets to zero and writes nothing.
CREATE FUNCTION lead_cube_upd() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    WITH r AS MATERIALIZED (
        SELECT 1 AS d, status, coalesce(source, '') AS source, coalesce(assigned_to, 0) AS assigned_to,
            custom_field_enums('leads', custom_fields) AS enums, (created_at AT TIME ZONE 'UTC')::date AS day
        FROM new_rows
        UNION ALL
        SELECT -1, status, coalesce(source, ''), coalesce(assigned_to, 0),
            custom_field_enums('leads', custom_fields), (created_at AT TIME ZONE 'UTC')::date
        FROM old_rows)
    INSERT INTO lead_cube (grain, period, status, source, assigned_to, enums, n)
    SELECT g.grain, g.period, r.status, r.source, r.assigned_to, r.enums, sum(r.d)
    FROM r, LATERAL (VALUES ('a'::"char", '-infinity'::date), ('m', date_trunc('month', r.day)::date), ('d', r.day)) g (grain, period)
    GROUP BY g.grain, g.period, r.status, r.source, r.assigned_to, r.enums HAVING sum(r.d) <> 0;
    RETURN NULL;
END $$;

CREATE FUNCTION lead_cube_truncate() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM lead_cube;
    RETURN NULL;
END $$;

CREATE TRIGGER leads_cube_ins AFTER INSERT ON leads
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION lead_cube_ins();
CREATE TRIGGER leads_cube_del AFTER DELETE ON leads
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION lead_cube_del();
CREATE TRIGGER leads_cube_upd AFTER UPDATE ON leads
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION lead_cube_upd();
CREATE TRIGGER leads_cube_truncate AFTER TRUNCATE ON leads
    FOR EACH STATEMENT EXECUTE FUNCTION lead_cube_truncate();

-- lead_cube_recount counts the cube again from the leads (a repair after
-- writes made with its triggers disabled); the caller holds a lock that
-- keeps writes out. The migration runs it for the leads already there:
-- the triggers above hold leads' lock, so no write slips between them.
CREATE FUNCTION lead_cube_recount() RETURNS void LANGUAGE sql AS $$
    DELETE FROM lead_cube;
    WITH r AS MATERIALIZED (
        SELECT status, coalesce(source, '') AS source, coalesce(assigned_to, 0) AS assigned_to,
            custom_field_enums('leads', custom_fields) AS enums, (created_at AT TIME ZONE 'UTC')::date AS day
        FROM leads)
    INSERT INTO lead_cube (grain, period, status, source, assigned_to, enums, n)
    SELECT g.grain, g.period, r.status, r.source, r.assigned_to, r.enums, count(*)
    FROM r, LATERAL (VALUES ('a'::"char", '-infinity'::date), ('m', date_trunc('month', r.day)::date), ('d', r.day)) g (grain, period)
    GROUP BY g.grain, g.period, r.status, r.source, r.assigned_to, r.enums;
$$;
SELECT lead_cube_recount();

-- lead_cube_compact folds each key's deltas into one row. It deletes only
-- the rows its snapshot sees, so deltas committed meanwhile survive, and
-- readers see either the old rows or the folded one.
CREATE FUNCTION lead_cube_compact() RETURNS void LANGUAGE sql AS $$
    WITH gone AS (
        DELETE FROM lead_cube c USING (
            SELECT grain, period, status, source, assigned_to, enums FROM lead_cube
            GROUP BY grain, period, status, source, assigned_to, enums HAVING count(*) > 1) k
        WHERE c.grain = k.grain AND c.period = k.period AND c.status = k.status AND c.source = k.source
            AND c.assigned_to = k.assigned_to AND c.enums = k.enums
        RETURNING c.*)
    INSERT INTO lead_cube (grain, period, status, source, assigned_to, enums, n)
    SELECT grain, period, status, source, assigned_to, enums, sum(n) FROM gone
    GROUP BY grain, period, status, source, assigned_to, enums HAVING sum(n) <> 0;
$$;

---- create above / drop below ----

DROP TRIGGER leads_cube_ins ON leads;
DROP TRIGGER leads_cube_del ON leads;
DROP TRIGGER leads_cube_upd ON leads;
DROP TRIGGER leads_cube_truncate ON leads;
DROP FUNCTION lead_cube_recount(), lead_cube_compact(), lead_cube_ins(), lead_cube_del(), lead_cube_upd(), lead_cube_truncate();
DROP TABLE lead_cube;
