-- The count cube's triggers read a lead's enum values from leads.enums
-- (migration 008) instead of computing them again per row
-- (custom_field_enums reads the definitions once per row written): the
-- column holds the same value, kept by its row trigger. That trigger runs
-- on an update only when custom_fields or enums changes (a WHEN clause, no
-- function call otherwise). Together they cost writes about what the cube
-- alone did before enums existed. lead_cube_recount still computes
-- from custom_fields, a repair that trusts nothing derived.
DROP TRIGGER leads_enums ON leads;
CREATE TRIGGER leads_enums BEFORE INSERT ON leads
    FOR EACH ROW EXECUTE FUNCTION leads_enums();
CREATE TRIGGER leads_enums_upd BEFORE UPDATE OF custom_fields, enums ON leads
    FOR EACH ROW WHEN (OLD.custom_fields IS DISTINCT FROM NEW.custom_fields OR OLD.enums IS DISTINCT FROM NEW.enums)
    EXECUTE FUNCTION leads_enums();

CREATE OR REPLACE FUNCTION lead_cube_ins() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    WITH r AS MATERIALIZED (
        SELECT status, coalesce(source, '') AS source, coalesce(assigned_to, 0) AS assigned_to,
            enums, (created_at AT TIME ZONE 'UTC')::date AS day
        FROM new_rows)
    INSERT INTO lead_cube (grain, period, status, source, assigned_to, enums, n)
    SELECT g.grain, g.period, r.status, r.source, r.assigned_to, r.enums, count(*)
    FROM r, LATERAL (VALUES ('a'::"char", '-infinity'::date), ('m', date_trunc('month', r.day)::date), ('d', r.day)) g (grain, period)
    GROUP BY g.grain, g.period, r.status, r.source, r.assigned_to, r.enums;
    RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION lead_cube_del() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    WITH r AS MATERIALIZED (
        SELECT status, coalesce(source, '') AS source, coalesce(assigned_to, 0) AS assigned_to,
            enums, (created_at AT TIME ZONE 'UTC')::date AS day
        FROM old_rows)
    INSERT INTO lead_cube (grain, period, status, source, assigned_to, enums, n)
    SELECT g.grain, g.period, r.status, r.source, r.assigned_to, r.enums, -count(*)
    FROM r, LATERAL (VALUES ('a'::"char", '-infinity'::date), ('m', date_trunc('month', r.day)::date), ('d', r.day)) g (grain, period)
    GROUP BY g.grain, g.period, r.status, r.source, r.assigned_to, r.enums;
    RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION lead_cube_upd() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    WITH r AS MATERIALIZED (
        SELECT 1 AS d, status, coalesce(source, '') AS source, coalesce(assigned_to, 0) AS assigned_to,
            enums, (created_at AT TIME ZONE 'UTC')::date AS day
        FROM new_rows
        UNION ALL
        SELECT -1, status, coalesce(source, ''), coalesce(assigned_to, 0),
            enums, (created_at AT TIME ZONE 'UTC')::date
        FROM old_rows)
    INSERT INTO lead_cube (grain, period, status, source, assigned_to, enums, n)
    SELECT g.grain, g.period, r.status, r.source, r.assigned_to, r.enums, sum(r.d)
    FROM r, LATERAL (VALUES ('a'::"char", '-infinity'::date), ('m', date_trunc('month', r.day)::date), ('d', r.day)) g (grain, period)
    GROUP BY g.grain, g.period, r.status, r.source, r.assigned_to, r.enums HAVING sum(r.d) <> 0;
    RETURN NULL;
END $$;

---- create above / drop below ----

CREATE OR REPLACE FUNCTION lead_cube_ins() RETURNS trigger LANGUAGE plpgsql AS $$
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

CREATE OR REPLACE FUNCTION lead_cube_del() RETURNS trigger LANGUAGE plpgsql AS $$
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

CREATE OR REPLACE FUNCTION lead_cube_upd() RETURNS trigger LANGUAGE plpgsql AS $$
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

DROP TRIGGER leads_enums_upd ON leads;
DROP TRIGGER leads_enums ON leads;
CREATE TRIGGER leads_enums BEFORE INSERT OR UPDATE OF custom_fields, enums ON leads
    FOR EACH ROW EXECUTE FUNCTION leads_enums();
