-- The count cube's triggers read a contact's enum values from contacts.enums
-- (migration 014) instead of computing them again per row
-- (custom_field_enums reads the definitions once per row written): the
-- column holds the same value, kept by its row trigger. That trigger runs
-- on an update only when custom_fields or enums changes (a WHEN clause, no
-- function call otherwise). Together they cost writes about what the cube
-- alone did before enums existed. contact_cube_recount still computes
-- from custom_fields, a repair that trusts nothing derived.
DROP TRIGGER contacts_enums ON contacts;
CREATE TRIGGER contacts_enums BEFORE INSERT ON contacts
    FOR EACH ROW EXECUTE FUNCTION contacts_enums();
CREATE TRIGGER contacts_enums_upd BEFORE UPDATE OF custom_fields, enums ON contacts
    FOR EACH ROW WHEN (OLD.custom_fields IS DISTINCT FROM NEW.custom_fields OR OLD.enums IS DISTINCT FROM NEW.enums)
    EXECUTE FUNCTION contacts_enums();

CREATE OR REPLACE FUNCTION contact_cube_ins() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    WITH r AS MATERIALIZED (
        SELECT status, coalesce(source, '') AS source, coalesce(assigned_to, 0) AS assigned_to,
            enums, (created_at AT TIME ZONE 'UTC')::date AS day
        FROM new_rows)
    INSERT INTO contact_cube (grain, period, status, source, assigned_to, enums, n)
    SELECT g.grain, g.period, r.status, r.source, r.assigned_to, r.enums, count(*)
    FROM r, LATERAL (VALUES ('a'::"char", '-infinity'::date), ('m', date_trunc('month', r.day)::date), ('d', r.day)) g (grain, period)
    GROUP BY g.grain, g.period, r.status, r.source, r.assigned_to, r.enums;
    RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION contact_cube_del() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    WITH r AS MATERIALIZED (
        SELECT status, coalesce(source, '') AS source, coalesce(assigned_to, 0) AS assigned_to,
            enums, (created_at AT TIME ZONE 'UTC')::date AS day
        FROM old_rows)
    INSERT INTO contact_cube (grain, period, status, source, assigned_to, enums, n)
    SELECT g.grain, g.period, r.status, r.source, r.assigned_to, r.enums, -count(*)
    FROM r, LATERAL (VALUES ('a'::"char", '-infinity'::date), ('m', date_trunc('month', r.day)::date), ('d', r.day)) g (grain, period)
    GROUP BY g.grain, g.period, r.status, r.source, r.assigned_to, r.enums;
    RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION contact_cube_upd() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    WITH r AS MATERIALIZED (
        SELECT 1 AS d, status, coalesce(source, '') AS source, coalesce(assigned_to, 0) AS assigned_to,
            enums, (created_at AT TIME ZONE 'UTC')::date AS day
        FROM new_rows
        UNION ALL
        SELECT -1, status, coalesce(source, ''), coalesce(assigned_to, 0),
            enums, (created_at AT TIME ZONE 'UTC')::date
        FROM old_rows)
    INSERT INTO contact_cube (grain, period, status, source, assigned_to, enums, n)
    SELECT g.grain, g.period, r.status, r.source, r.assigned_to, r.enums, sum(r.d)
    FROM r, LATERAL (VALUES ('a'::"char", '-infinity'::date), ('m', date_trunc('month', r.day)::date), ('d', r.day)) g (grain, period)
    GROUP BY g.grain, g.period, r.status, r.source, r.assigned_to, r.enums HAVING sum(r.d) <> 0;
    RETURN NULL;
END $$;

---- create above / drop below ----

CREATE OR REPLACE FUNCTION contact_cube_ins() RETURNS trigger LANGUAGE plpgsql AS $$
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

CREATE OR REPLACE FUNCTION contact_cube_del() RETURNS trigger LANGUAGE plpgsql AS $$
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

CREATE OR REPLACE FUNCTION contact_cube_upd() RETURNS trigger LANGUAGE plpgsql AS $$
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

DROP TRIGGER contacts_enums_upd ON contacts;
DROP TRIGGER contacts_enums ON contacts;
CREATE TRIGGER contacts_enums BEFORE INSERT OR UPDATE OF custom_fields, enums ON contacts
    FOR EACH ROW EXECUTE FUNCTION contacts_enums();
