-- Every change the contexts publish, numbered in commit order (seq is taken
-- under one advisory lock, so a reader paging with ?after= never skips an
-- event that committed late). (source, source_id, part) is the outbox row
-- that carried it: a message Redis hands over twice is stored once. part
-- numbers the events one row expands into (a contacts.imported row becomes
-- one contact.created per contact); 0 for every other row.
CREATE TABLE events (
    seq         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    source      text        NOT NULL,
    source_id   bigint      NOT NULL,
    part        integer     NOT NULL DEFAULT 0,
    type        text        NOT NULL,
    record_id   text        NOT NULL,
    data        jsonb       NOT NULL,
    occurred_at timestamptz NOT NULL,
    stored_at   timestamptz NOT NULL DEFAULT now(),
    UNIQUE (source, source_id, part)
);

CREATE INDEX events_type ON events (type, seq);
CREATE INDEX events_stored ON events (stored_at);

-- A subscription: where to POST and which event types. The signing secret
-- is sealed (pkg/sealbox); after a rotation the previous one keeps signing
-- alongside until previous_secret_expires_at.
CREATE TABLE subscriptions (
    id                         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    url                        text        NOT NULL,
    events                     text[]      NOT NULL,
    description                text        NOT NULL DEFAULT '',
    active                     boolean     NOT NULL DEFAULT true,
    disabled_reason            text,
    secret                     bytea       NOT NULL,
    secret_prefix              text        NOT NULL,
    previous_secret            bytea,
    previous_secret_expires_at timestamptz,
    created_by                 bigint,
    created_at                 timestamptz NOT NULL DEFAULT now(),
    updated_at                 timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX subscriptions_created ON subscriptions (created_at DESC, id DESC);

-- One event for one subscription (or a ping, event_seq NULL). record_key
-- (source:record id) orders the deliveries of one record: a later one waits
-- while an earlier one is pending. queued marks a delivery handed to a
-- worker; the dispatcher caps them per subscription.
CREATE TABLE deliveries (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    subscription_id bigint      NOT NULL REFERENCES subscriptions (id) ON DELETE CASCADE,
    event_seq       bigint      REFERENCES events (seq) ON DELETE CASCADE,
    event_type      text        NOT NULL,
    record_key      text        NOT NULL,
    status          text        NOT NULL DEFAULT 'pending'
                    CHECK (status IN ('pending', 'delivered', 'failed')),
    queued          boolean     NOT NULL DEFAULT false,
    queued_at       timestamptz,
    attempt         integer     NOT NULL DEFAULT 0,
    status_code     integer,
    duration_ms     integer,
    error           text,
    response_body   text,
    next_attempt_at timestamptz NOT NULL DEFAULT now(),
    last_attempt_at timestamptz,
    created_at      timestamptz NOT NULL DEFAULT now()
);

-- The dispatcher's scan of what is due, per subscription.
CREATE INDEX deliveries_due ON deliveries (subscription_id, next_attempt_at, id) WHERE status = 'pending' AND NOT queued;
-- The per-record head check.
CREATE INDEX deliveries_head ON deliveries (subscription_id, record_key, id) WHERE status = 'pending';
-- Worker slots in use per subscription, and the sweeper of lost tasks.
CREATE INDEX deliveries_queued ON deliveries (subscription_id, queued_at) WHERE queued;
-- The delivery log of a subscription, newest first.
CREATE INDEX deliveries_log ON deliveries (subscription_id, id DESC);
CREATE INDEX deliveries_event ON deliveries (event_seq);
CREATE INDEX deliveries_finished ON deliveries (created_at) WHERE status <> 'pending';
