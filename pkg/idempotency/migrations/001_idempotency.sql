CREATE TABLE idempotency_keys (
    key          text PRIMARY KEY,
    request_hash bytea       NOT NULL,
    status       integer     NOT NULL,
    response     bytea       NOT NULL, -- the exact bytes answered, replayed verbatim
    created_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX idempotency_keys_created ON idempotency_keys (created_at);

---- create above / drop below ----

DROP TABLE idempotency_keys;
