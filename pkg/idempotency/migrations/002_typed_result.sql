-- Expand step of storing typed results (idempotency.Once) instead of HTTP
-- answers (idempotency.Run): a row holds either result (the JSON of the
-- value Once's fn returned) or status and response (an answer Run stored,
-- as every row written before this migration does). Once still reads the
-- latter, so a retry across the upgrade replays the record created before
-- it. The contract step (dropping status and response) waits until no
-- caller uses Run and the last row it wrote is older than the 24 h purge.
ALTER TABLE idempotency_keys
    ADD COLUMN result bytea,
    ALTER COLUMN status DROP NOT NULL,
    ALTER COLUMN response DROP NOT NULL,
    ADD CONSTRAINT idempotency_keys_one_answer
        CHECK ((result IS NULL) = (status IS NOT NULL AND response IS NOT NULL));

---- create above / drop below ----

-- Rows Once wrote have no HTTP answer to restore; their keys are forgotten.
DELETE FROM idempotency_keys WHERE result IS NOT NULL;
ALTER TABLE idempotency_keys
    DROP CONSTRAINT idempotency_keys_one_answer,
    DROP COLUMN result,
    ALTER COLUMN status SET NOT NULL,
    ALTER COLUMN response SET NOT NULL;
