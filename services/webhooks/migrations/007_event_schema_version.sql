-- The version of an event's data shape (docs/releasing.md), as its context's
-- stream relayed it, served in the feed and in deliveries as
-- schema_version. Events stored before are version 1.
ALTER TABLE events ADD COLUMN schema_version integer NOT NULL DEFAULT 1;

---- create above / drop below ----

ALTER TABLE events DROP COLUMN schema_version;
