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
    -- The changed fields' values before and after (a create has no
    -- before, a delete no after; the fields without a value are left
    -- out): the reader lists them field by field, custom fields one by
    -- one. Comparing top-level values here and the custom fields when
    -- read keeps the trigger to one pass over each row's columns.
    before     jsonb,
    after      jsonb
);
-- A record's entries newest first, from a cursor: one index range.
CREATE INDEX history_record ON history (object, record_id, id);
CREATE INDEX history_parent ON history (parent_object, parent_id, id) WHERE parent_id IS NOT NULL;

-- history_capture is the statement-level trigger of a tracked table
-- (history_track): TG_ARGV[0] is the object name, TG_ARGV[1] the ignored
-- columns, TG_ARGV[2] and [3] the parent (see history_track). Who and how
-- come from the session settings the service sets when a connection is
-- taken for a request (pkg/history): crm.actor, crm.via, crm.request_id;
-- without them the change is the system's.
CREATE FUNCTION history_capture() RETURNS trigger LANGUAGE plpgsql
-- Transition tables have no statistics: a guessed plan is cheap enough,
-- JIT compilation of it is not.
SET jit = off AS $$
DECLARE
    v_object  text   := TG_ARGV[0];
    v_ignored text[] := TG_ARGV[1]::text[];
    v_pobject text   := nullif(TG_ARGV[2], '');
    v_pcolumn text   := nullif(TG_ARGV[3], '');
    v_actor   jsonb  := coalesce(nullif(current_setting('crm.actor', true), '')::jsonb, '{"type": "system"}');
    v_via     text   := coalesce(nullif(current_setting('crm.via', true), ''), 'system');
    v_request text   := coalesce(current_setting('crm.request_id', true), '');
BEGIN
    -- Each row image is computed once (OFFSET 0 keeps the planner from
    -- inlining to_jsonb into every use of it).
    IF TG_OP = 'INSERT' THEN
        INSERT INTO history (object, record_id, parent_object, parent_id, action, actor, via, request_id, after)
        SELECT v_object, r.id, history_parent_object(r.j, v_pobject), (r.j ->> v_pcolumn)::bigint,
            'created', v_actor, v_via, v_request, jsonb_strip_nulls(r.j - v_ignored)
        FROM (SELECT n.id, to_jsonb(n) AS j FROM new_rows n OFFSET 0) r
        ORDER BY r.id;
    ELSIF TG_OP = 'DELETE' THEN
        INSERT INTO history (object, record_id, parent_object, parent_id, action, actor, via, request_id, before)
        SELECT v_object, r.id, history_parent_object(r.j, v_pobject), (r.j ->> v_pcolumn)::bigint,
            'deleted', v_actor, v_via, v_request, jsonb_strip_nulls(r.j - v_ignored)
        FROM (SELECT o.id, to_jsonb(o) AS j FROM old_rows o OFFSET 0) r
        ORDER BY r.id;
    ELSE
        INSERT INTO history (object, record_id, parent_object, parent_id, action, actor, via, request_id, before, after)
        SELECT v_object, r.id, history_parent_object(r.nj, v_pobject), (r.nj ->> v_pcolumn)::bigint,
            'updated', v_actor, v_via, v_request, d.before, d.after
        FROM (SELECT n.id, to_jsonb(o) AS oj, to_jsonb(n) AS nj FROM new_rows n JOIN old_rows o ON o.id = n.id OFFSET 0) r,
            LATERAL (SELECT jsonb_object_agg(e.key, r.oj -> e.key) AS before, jsonb_object_agg(e.key, e.value) AS after
                FROM jsonb_each(r.nj - v_ignored) e WHERE (r.oj -> e.key) IS DISTINCT FROM e.value) d
        WHERE d.after IS NOT NULL
        ORDER BY r.id;
    END IF;
    RETURN NULL;
END
$$;

-- history_parent_object is a row image's parent object: the one named,
-- or, written '@column', the one that column of the row names (NULL:
-- none). A parent's id is the row's value of the parent column.
CREATE FUNCTION history_parent_object(j jsonb, named text) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN named LIKE '@%' THEN j ->> substr(named, 2) ELSE named END
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
DROP FUNCTION history_parent_object(jsonb, text);
DROP TABLE history;
