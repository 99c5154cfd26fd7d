-- A person's privacy requests (pkg/contract/privacyapi): exports (access,
-- portability) and erasures, each a saga identity runs across the contexts
-- in privacyapi.Phases. A request names its person by e-mail address; the
-- address is kept only while the request runs (the contexts are asked by
-- it) and set to NULL once completed. email_hash, HMAC-SHA256 of the
-- lower-cased, trimmed address under a server key (CRM_PRIVACY_HASH_KEY),
-- finds a person's requests afterwards without keeping the address.
--
-- parts holds each context's answer as it arrived (an ExportPart or an
-- ErasePart, by context name), so a context that was down is asked again
-- alone; phase is the first phase not fully answered. A runner claims the
-- due requests (next_attempt_at passed, not completed) with FOR UPDATE
-- SKIP LOCKED and leases them by moving next_attempt_at ahead, so several
-- replicas never work one request at once and a replica that dies leaves
-- its request to another when the lease ends.

CREATE TABLE privacy_exports (
    id              bigserial   PRIMARY KEY,
    email_hash      bytea       NOT NULL,
    email           text,
    status          text        NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'running', 'completed')),
    phase           int         NOT NULL DEFAULT 0,
    parts           jsonb       NOT NULL DEFAULT '{}',
    document        jsonb,
    requested_by    jsonb       NOT NULL,
    requested_at    timestamptz NOT NULL DEFAULT now(),
    completed_at    timestamptz,
    next_attempt_at timestamptz NOT NULL DEFAULT now(),
    attempts        int         NOT NULL DEFAULT 0,
    last_error      text        NOT NULL DEFAULT '',
    CHECK ((status = 'completed') = (email IS NULL))
);
CREATE INDEX privacy_exports_person ON privacy_exports (email_hash);
CREATE INDEX privacy_exports_due ON privacy_exports (next_attempt_at) WHERE status <> 'completed';

-- One erasure per person: a second request for the address answers the
-- first, and two at once make one (the unique index).
CREATE TABLE privacy_erasures (
    id              bigserial   PRIMARY KEY,
    email_hash      bytea       NOT NULL,
    email           text,
    reason          text        NOT NULL DEFAULT '',
    status          text        NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'running', 'completed')),
    phase           int         NOT NULL DEFAULT 0,
    parts           jsonb       NOT NULL DEFAULT '{}',
    requested_by    jsonb       NOT NULL,
    requested_at    timestamptz NOT NULL DEFAULT now(),
    completed_at    timestamptz,
    next_attempt_at timestamptz NOT NULL DEFAULT now(),
    attempts        int         NOT NULL DEFAULT 0,
    last_error      text        NOT NULL DEFAULT '',
    CHECK ((status = 'completed') = (email IS NULL))
);
CREATE UNIQUE INDEX privacy_erasures_person ON privacy_erasures (email_hash);
CREATE INDEX privacy_erasures_due ON privacy_erasures (next_attempt_at) WHERE status <> 'completed';

---- create above / drop below ----

DROP TABLE privacy_erasures;
DROP TABLE privacy_exports;
