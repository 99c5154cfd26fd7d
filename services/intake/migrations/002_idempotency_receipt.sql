-- Expand step of keeping what a submission came to (intake.Receipt) for an
-- Idempotency-Key instead of the HTTP answer: a done row holds its receipt
-- in the receipt_ columns (the lead, the queued submission, or leads'
-- refusal), or, written before this migration, status and response, which
-- the store still reads back as a receipt. The contract step (dropping
-- status and response) can run once no row older than this migration is
-- left: 24 h, the idempotency TTL, after it.
ALTER TABLE idempotency_requests
    ADD COLUMN receipt_lead_id bigint,
    ADD COLUMN receipt_queued_id bigint,
    ADD COLUMN receipt_refusal jsonb;

---- create above / drop below ----

-- A row done with a receipt only has no HTTP answer to restore: forgotten.
DELETE FROM idempotency_requests WHERE state = 'done' AND status IS NULL;
ALTER TABLE idempotency_requests
    DROP COLUMN receipt_lead_id,
    DROP COLUMN receipt_queued_id,
    DROP COLUMN receipt_refusal;
