-- The values a record holds of its object's enum fields: what a context's
-- count cube (pkg/list/cube) keys records by, beside status, source and
-- owner. STABLE: it reads the definitions, which every record write holds
-- (customfield.Hold), so they cannot change under a statement; a
-- definition's values are removed before the definition (Store.Delete).
-- plpgsql, not SQL: its statement's plan is cached per session, where a
-- SQL function's aggregate is planned again on every call (0.9-1.7 ms per
-- row written, against 0.4-0.8 ms).
CREATE FUNCTION custom_field_enums(obj text, vals jsonb) RETURNS jsonb
LANGUAGE plpgsql STABLE AS $$
DECLARE
    enums jsonb;
BEGIN
    IF vals = '{}' THEN
        RETURN vals;
    END IF;
    SELECT coalesce(jsonb_object_agg(d.name, vals -> d.name), '{}') INTO enums
    FROM custom_field_definitions d
    WHERE d.object = obj AND d.type = 'enum' AND vals ? d.name;
    RETURN enums;
END $$;

---- create above / drop below ----

DROP FUNCTION custom_field_enums(text, jsonb);
