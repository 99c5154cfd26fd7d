-- The version of the event's data shape (docs/releasing.md), relayed with it as
-- schema_version. A release that still writes events without it writes
-- today's shapes, version 1: the default.
ALTER TABLE outbox ADD COLUMN schema_version integer NOT NULL DEFAULT 1;

---- create above / drop below ----

ALTER TABLE outbox DROP COLUMN schema_version;
