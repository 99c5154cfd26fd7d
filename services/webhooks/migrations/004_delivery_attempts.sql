-- Every attempt of a delivery, as its log lists them (the delivery row
-- keeps the outcome of the latest one as well, as before). The engine
-- inserts a batch's attempts in the statement that records their
-- outcomes. Attempts go with their delivery (the retention sweep, a
-- deleted subscription); the primary key serves both the log's reads and
-- that cascade.
CREATE TABLE delivery_attempts (
    delivery_id   bigint      NOT NULL REFERENCES deliveries (id) ON DELETE CASCADE,
    attempt       integer     NOT NULL CHECK (attempt > 0),
    status_code   integer,
    error         text,
    duration_ms   integer     NOT NULL,
    response_body text,
    attempted_at  timestamptz NOT NULL,
    PRIMARY KEY (delivery_id, attempt)
);

-- A delivery attempted before this version has only its latest attempt
-- on record; that one is listed.
INSERT INTO delivery_attempts (delivery_id, attempt, status_code, error, duration_ms, response_body, attempted_at)
SELECT id, attempt, status_code, error, coalesce(duration_ms, 0), response_body, coalesce(last_attempt_at, created_at)
FROM deliveries WHERE attempt > 0;
