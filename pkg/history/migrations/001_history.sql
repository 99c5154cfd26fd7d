-- Field-level history of the records a context owns, written by triggers
-- in the same statement as the change: every write path (the API, batch
-- writes, imports, foreign keys' ON DELETE SET NULL, plain SQL) is
-- recorded, and a change that rolls back leaves no entry.
CREATE TABLE history (
    id         bigserial   PRIMARY KEY,
    object     text        NOT NULL,
    record_id  bigint      NOT NULL,
    -- The record this one belongs to, whose history lists it too (a
    -- note's contact, a quote's deal); NULL for none.
    parent_object text,
    parent_id     bigint,
    at         timestamptz NOT NULL DEFAULT now(),
    action     text        NOT NULL CHECK (action IN ('created', 'updated', 'deleted')),
    -- {"type": "user|token|api_key|system", "id": ..., "name": ...}
    actor      jsonb       NOT NULL,
    via        text        NOT NULL,
    request_id text        NOT NULL DEFAULT '',
    -- [{"field", "from", "to"}], custom fields as "custom_fields.<name>"
    changes    jsonb       NOT NULL
);
-- A record's entries newest first, from a cursor: one index range.
CREATE INDEX history_record ON history (object, record_id, id);
CREATE INDEX history_parent ON history (parent_object, parent_id, id) WHERE parent_id IS NOT NULL;

-- history_changes lists the fields whose values differ between two row
-- images (to_jsonb of the row; NULL for none), custom fields one by one,
-- leaving out the ignored columns. JSON null and an absent value are the
-- same: a create lists the fields it set, a delete the fields it cleared.
CREATE FUNCTION history_changes(old jsonb, new jsonb, ignored text[]) RETURNS jsonb
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT coalesce(jsonb_agg(jsonb_build_object('field', field, 'from', coalesce(o, 'null'), 'to', coalesce(n, 'null'))
        ORDER BY field), '[]')
    FROM (
        SELECT coalesce(a.key, b.key) AS field, nullif(a.value, 'null') AS o, nullif(b.value, 'null') AS n
        FROM jsonb_each(coalesce(old, '{}') - ignored - 'custom_fields') a
        FULL JOIN jsonb_each(coalesce(new, '{}') - ignored - 'custom_fields') b ON a.key = b.key
        UNION ALL
        SELECT 'custom_fields.' || coalesce(a.key, b.key), nullif(a.value, 'null'), nullif(b.value, 'null')
        FROM jsonb_each(CASE jsonb_typeof(old -> 'custom_fields') WHEN 'object' THEN old -> 'custom_fields' ELSE '{}' END) a
        FULL JOIN jsonb_each(CASE jsonb_typeof(new -> 'custom_fields') WHEN 'object' THEN new -> 'custom_fields' ELSE '{}' END) b
            ON a.key = b.key
    ) c
    WHERE o IS DISTINCT FROM n
$$;

-- history_capture is the statement-level trigger of a tracked table
-- (history_track): TG_ARGV[0] is the object name, TG_ARGV[1] the ignored
-- columns, TG_ARGV[2] and [3] the parent (see history_track). Who and how
-- come from the session settings the service sets when a connection is
-- taken for a request (pkg/history): crm.actor, crm.via, crm.request_id;
-- without them the change is the system's.
CREATE FUNCTION history_capture() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    v_object  text   := TG_ARGV[0];
    v_ignored text[] := TG_ARGV[1]::text[];
    v_pobject text   := nullif(TG_ARGV[2], '');
    v_pcolumn text   := nullif(TG_ARGV[3], '');
    v_actor   jsonb  := coalesce(nullif(current_setting('crm.actor', true), '')::jsonb, '{"type": "system"}');
    v_via     text   := coalesce(nullif(current_setting('crm.via', true), ''), 'system');
    v_request text   := coalesce(current_setting('crm.request_id', true), '');
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO history (object, record_id, parent_object, parent_id, action, actor, via, request_id, changes)
        SELECT v_object, (r.j ->> 'id')::bigint, p.object, p.id, 'created', v_actor, v_via, v_request, history_changes(NULL, r.j, v_ignored)
        FROM (SELECT to_jsonb(n) AS j FROM new_rows n) r, history_parent(r.j, v_pobject, v_pcolumn) p
        ORDER BY 2;
    ELSIF TG_OP = 'DELETE' THEN
        INSERT INTO history (object, record_id, parent_object, parent_id, action, actor, via, request_id, changes)
        SELECT v_object, (r.j ->> 'id')::bigint, p.object, p.id, 'deleted', v_actor, v_via, v_request, history_changes(r.j, NULL, v_ignored)
        FROM (SELECT to_jsonb(o) AS j FROM old_rows o) r, history_parent(r.j, v_pobject, v_pcolumn) p
        ORDER BY 2;
    ELSE
        INSERT INTO history (object, record_id, parent_object, parent_id, action, actor, via, request_id, changes)
        SELECT v_object, n.id, p.object, p.id, 'updated', v_actor, v_via, v_request, c.changes
        FROM new_rows n JOIN old_rows o ON o.id = n.id,
            LATERAL (SELECT history_changes(to_jsonb(o), to_jsonb(n), v_ignored) AS changes) c,
            history_parent(to_jsonb(n), v_pobject, v_pcolumn) p
        WHERE c.changes <> '[]'
        ORDER BY 2;
    END IF;
    RETURN NULL;
END
$$;

-- history_parent is a row image's parent: the object named (or, written
-- '@column', the one that column of the row names) and the id in column.
CREATE FUNCTION history_parent(j jsonb, named text, id_column text, OUT object text, OUT id bigint)
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN $2 LIKE '@%' THEN $1 ->> substr($2, 2) ELSE $2 END, ($1 ->> $3)::bigint
$$;

-- history_track records every insert, update and delete of tbl (which has
-- a bigint id) as object, ignoring its id, created_at, updated_at and the
-- columns named (derived or internal ones: search text, sort keys). A
-- child record names its parent: parent_object is the parent's object
-- ('deal') or '@' and the column that holds it ('@parent_type'), and
-- parent_column the column holding the parent's id.
CREATE FUNCTION history_track(tbl regclass, object text, ignored text[] DEFAULT '{}',
    parent_object text DEFAULT '', parent_column text DEFAULT '') RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    args text := quote_literal(object) || ', ' || quote_literal((ARRAY['id', 'created_at', 'updated_at'] || ignored)::text)
        || ', ' || quote_literal(parent_object) || ', ' || quote_literal(parent_column);
    name text := (SELECT relname FROM pg_class WHERE oid = tbl);
BEGIN
    EXECUTE format('CREATE TRIGGER %I AFTER INSERT ON %s REFERENCING NEW TABLE AS new_rows
        FOR EACH STATEMENT EXECUTE FUNCTION history_capture(%s)', name || '_history_ins', tbl, args);
    EXECUTE format('CREATE TRIGGER %I AFTER UPDATE ON %s REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
        FOR EACH STATEMENT EXECUTE FUNCTION history_capture(%s)', name || '_history_upd', tbl, args);
    EXECUTE format('CREATE TRIGGER %I AFTER DELETE ON %s REFERENCING OLD TABLE AS old_rows
        FOR EACH STATEMENT EXECUTE FUNCTION history_capture(%s)', name || '_history_del', tbl, args);
END
$$;

---- create above / drop below ----

DROP FUNCTION history_track(regclass, text, text[], text, text);
DROP FUNCTION history_capture() CASCADE;
DROP FUNCTION history_parent(jsonb, text, text);
DROP FUNCTION history_changes(jsonb, jsonb, text[]);
DROP TABLE history;
