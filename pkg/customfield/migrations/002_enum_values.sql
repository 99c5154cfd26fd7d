-- The values a record holds of its object's enum fields: what a context's
-- count cube (pkg/list/cube) keys records by, beside status, source and
-- owner. STABLE: it reads the definitions, which every record write holds
-- (customfield.Hold), so they cannot change under a statement; a
-- definition's values are removed before the definition (Store.Delete).
CREATE FUNCTION custom_field_enums(obj text, vals jsonb) RETURNS jsonb
LANGUAGE sql STABLE AS $$
    SELECT coalesce(jsonb_object_agg(d.name, vals -> d.name), '{}')
    FROM custom_field_definitions d
    WHERE d.object = obj AND d.type = 'enum' AND vals ? d.name
$$;

---- create above / drop below ----

DROP FUNCTION custom_field_enums(text, jsonb);
