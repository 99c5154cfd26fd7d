CREATE TABLE outbox (
    id           bigserial PRIMARY KEY,
    stream       text        NOT NULL,
    type         text        NOT NULL,
    aggregate_id text        NOT NULL,
    payload      jsonb       NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    published_at timestamptz
);
CREATE INDEX outbox_unpublished ON outbox (id) WHERE published_at IS NULL;

---- create above / drop below ----

DROP TABLE outbox;
