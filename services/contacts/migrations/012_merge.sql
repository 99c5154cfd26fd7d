-- Duplicates and merge (docs/decisions.md, "Duplicates and merge"). Expand
-- only: new columns, indexes and tables; nothing the previous release
-- reads is dropped or renamed.

-- 1. A contact's phone in E.164 (github.com/nyaruka/phonenumbers, in Go):
-- its phone, else its mobile. NULL is "not computed yet" (rows written
-- before this release, or by a write path of the previous release during
-- a rolling deploy); '' is "computed: no usable number". The service
-- computes it on its write paths and a background pass fills the pending
-- rows in batches (contacts_phone_pending finds them without a scan).
ALTER TABLE contacts ADD COLUMN phone_e164 text;
CREATE INDEX contacts_phone_e164 ON contacts (phone_e164, id) WHERE phone_e164 <> '';
CREATE INDEX contacts_phone_pending ON contacts (id) WHERE phone_e164 IS NULL AND (phone IS NOT NULL OR mobile IS NOT NULL);

-- A write that changes phone or mobile without giving phone_e164 (the
-- previous release, plain SQL) leaves it pending instead of stale.
CREATE FUNCTION contacts_phone_e164_stale() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.phone_e164 IS NOT DISTINCT FROM OLD.phone_e164 THEN
        NEW.phone_e164 := NULL;
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER contacts_phone_e164_stale BEFORE UPDATE OF phone, mobile ON contacts FOR EACH ROW
    WHEN (OLD.phone IS DISTINCT FROM NEW.phone OR OLD.mobile IS DISTINCT FROM NEW.mobile)
    EXECUTE FUNCTION contacts_phone_e164_stale();

-- phone_e164 is derived from phone and mobile: history leaves it out, as
-- it leaves out the other derived columns (011).
DROP TRIGGER contacts_history_ins ON contacts;
DROP TRIGGER contacts_history_upd ON contacts;
DROP TRIGGER contacts_history_del ON contacts;
SELECT history_track('contacts', 'contact', ARRAY['sort_name', 'search_text', 'company_name', 'created_by', 'phone_e164']);

-- 2. Companies by domain, case-insensitively (duplicates, and the batch's
-- id_property=domain lookups, which scanned).
CREATE INDEX companies_lower_domain ON companies (lower(domain), id) WHERE domain IS NOT NULL;

-- 3. Pairs a user said are not duplicates (a < b), per object.
CREATE TABLE duplicate_dismissals (
    object     text        NOT NULL CHECK (object IN ('contact', 'company')),
    a          bigint      NOT NULL,
    b          bigint      NOT NULL,
    created_by bigint,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (object, a, b),
    CHECK (a < b)
);

-- 4. Merges: the saga contacts runs. The local step (fields, tags, notes
-- and tasks, company links, merged rows deleted, tombstones) commits with
-- the merge row; steps holds each mover's state ({"deals": {"status":
-- "pending"|"done", "moved": {...}, "attempts": n, "error": "..."}}), and
-- the runner completes a running merge after next_at.
CREATE TABLE merges (
    id           bigserial   PRIMARY KEY,
    object       text        NOT NULL CHECK (object IN ('contact', 'company')),
    survivor     bigint      NOT NULL,
    merged       bigint[]    NOT NULL,  -- ascending
    fields       jsonb       NOT NULL,  -- the request's field choices
    status       text        NOT NULL CHECK (status IN ('running', 'completed')),
    steps        jsonb       NOT NULL,
    actor        jsonb,                 -- who asked, for the movers' history
    attempts     integer     NOT NULL DEFAULT 0,
    next_at      timestamptz NOT NULL DEFAULT now(),
    created_at   timestamptz NOT NULL DEFAULT now(),
    updated_at   timestamptz NOT NULL DEFAULT now(),
    completed_at timestamptz
);
CREATE INDEX merges_survivor ON merges (object, survivor, id);
CREATE INDEX merges_running ON merges (next_at, id) WHERE status = 'running';

-- A merged record's tombstone: its id answers 404 merged, merged_into.
CREATE TABLE merged_records (
    object   text   NOT NULL CHECK (object IN ('contact', 'company')),
    id       bigint NOT NULL,
    "into"   bigint NOT NULL,
    merge_id bigint NOT NULL REFERENCES merges (id),
    PRIMARY KEY (object, id)
);

---- create above / drop below ----

DROP TABLE merged_records;
DROP TABLE merges;
DROP TABLE duplicate_dismissals;
DROP INDEX companies_lower_domain;
DROP TRIGGER contacts_history_ins ON contacts;
DROP TRIGGER contacts_history_upd ON contacts;
DROP TRIGGER contacts_history_del ON contacts;
SELECT history_track('contacts', 'contact', ARRAY['sort_name', 'search_text', 'company_name', 'created_by']);
DROP TRIGGER contacts_phone_e164_stale ON contacts;
DROP FUNCTION contacts_phone_e164_stale();
DROP INDEX contacts_phone_pending;
DROP INDEX contacts_phone_e164;
ALTER TABLE contacts DROP COLUMN phone_e164;
