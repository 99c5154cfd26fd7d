-- The durable submission log: every accepted public submission is written
-- here before it is forwarded to leads, so a lead is never lost while the
-- leads service is down.
CREATE TABLE submissions (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    api_key_id      bigint      NOT NULL,
    status          text        NOT NULL DEFAULT 'pending'
                    CHECK (status IN ('pending', 'delivered', 'failed', 'spam')),
    first_name      text        NOT NULL,
    last_name       text        NOT NULL,
    email           text        NOT NULL,
    phone           text        NOT NULL DEFAULT '',
    company         text        NOT NULL DEFAULT '',
    job_title       text        NOT NULL DEFAULT '',
    source          text        NOT NULL DEFAULT 'public-api',
    notes           text        NOT NULL DEFAULT '',
    origin          text        NOT NULL DEFAULT '',
    lead_id         bigint,
    attempts        integer     NOT NULL DEFAULT 0,
    next_attempt_at timestamptz NOT NULL DEFAULT now(),
    last_error      text        NOT NULL DEFAULT '',
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now(),
    delivered_at    timestamptz
);

-- The retry job scans only what is due.
CREATE INDEX submissions_due ON submissions (next_attempt_at) WHERE status = 'pending';
CREATE INDEX submissions_created ON submissions (created_at, id);
CREATE INDEX submissions_key ON submissions (api_key_id, created_at);

-- Idempotency-Key records, scoped to the API key. A row is in_flight while
-- its first request runs (a concurrent retry gets 409) and done with the
-- stored answer afterwards (a retry gets the same answer for 24 h).
CREATE TABLE idempotency_requests (
    api_key_id   bigint      NOT NULL,
    key          text        NOT NULL,
    request_hash bytea       NOT NULL,
    state        text        NOT NULL CHECK (state IN ('in_flight', 'done')),
    status       integer,
    response     bytea,
    submission_id bigint REFERENCES submissions (id) ON DELETE SET NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (api_key_id, key)
);
CREATE INDEX idempotency_requests_created ON idempotency_requests (created_at);

---- create above / drop below ----

DROP TABLE idempotency_requests;
DROP TABLE submissions;
