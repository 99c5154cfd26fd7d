-- Expand step of keeping what a submission came to (intake.Receipt) for an
-- Idempotency-Key instead of the HTTP answer: a done row holds receipt, or,
-- written before this migration, status and response, which the store
-- still reads back as a receipt. The contract step (dropping status and
-- response) can run once no row older than this migration is left, 24 h
-- (INTAKE's idempotency TTL) after it.
ALTER TABLE idempotency_requests ADD COLUMN receipt jsonb;

---- create above / drop below ----

-- A row done with a receipt only has no HTTP answer to restore: forgotten.
DELETE FROM idempotency_requests WHERE receipt IS NOT NULL AND status IS NULL;
ALTER TABLE idempotency_requests DROP COLUMN receipt;
