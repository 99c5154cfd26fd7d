-- A person's erasure (privacy requests) redacts the events of the feed
-- about them: every value of the payload but ids, timestamps and nulls
-- becomes "[erased]", in nested objects and arrays too (privacy_redact).
--
-- The contacts and leads an erasure named are kept by id (erased_records)
-- so that an event about them still on its way when the erasure ran (in
-- a context's outbox or stream, or in a backlog webhooks reads after a
-- stop) is stored redacted: the trigger redacts a contact.* or lead.*
-- event of such a record as it is inserted. An id alone tells nothing
-- about the person.
CREATE FUNCTION privacy_redact(v jsonb) RETURNS jsonb
LANGUAGE plpgsql IMMUTABLE STRICT AS $$
BEGIN
    CASE jsonb_typeof(v)
    WHEN 'object' THEN
        RETURN coalesce((SELECT jsonb_object_agg(e.key,
                CASE WHEN e.key = 'id' OR e.key LIKE '%\_id' OR e.key IN ('created_at', 'updated_at', 'occurred_at')
                    THEN e.value ELSE privacy_redact(e.value) END)
            FROM jsonb_each(v) e), '{}'::jsonb);
    WHEN 'array' THEN
        RETURN coalesce((SELECT jsonb_agg(privacy_redact(a.value) ORDER BY a.n)
            FROM jsonb_array_elements(v) WITH ORDINALITY a (value, n)), '[]'::jsonb);
    WHEN 'null' THEN
        RETURN v;
    ELSE
        RETURN to_jsonb('[erased]'::text);
    END CASE;
END $$;

CREATE TABLE erased_records (
    object    text        NOT NULL CHECK (object IN ('contact', 'lead')),
    record_id text        NOT NULL,
    erased_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (object, record_id)
);

CREATE FUNCTION events_redact_erased() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM erased_records r
               WHERE r.object = split_part(NEW.type, '.', 1) AND r.record_id = NEW.record_id) THEN
        NEW.data := privacy_redact(NEW.data);
    END IF;
    RETURN NEW;
END $$;

CREATE TRIGGER events_redact_erased BEFORE INSERT ON events
    FOR EACH ROW EXECUTE FUNCTION events_redact_erased();

---- create above / drop below ----

DROP TRIGGER events_redact_erased ON events;
DROP FUNCTION events_redact_erased();
DROP TABLE erased_records;
DROP FUNCTION privacy_redact(jsonb);
