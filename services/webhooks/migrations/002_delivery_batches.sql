-- Deliveries are handed to workers in batches, one per subscription and
-- worker slot: queued_batch names the batch a queued delivery belongs to,
-- so the per-subscription cap counts batches in flight, and a worker's
-- outcome applies only to the batch it was given (a duplicate or
-- superseded task changes nothing).
CREATE SEQUENCE delivery_batches;

ALTER TABLE deliveries ADD COLUMN queued_batch bigint;

-- Batches in flight per subscription, and the sweeper of lost batches.
CREATE INDEX deliveries_batches ON deliveries (subscription_id, queued_batch, queued_at) WHERE queued;
DROP INDEX deliveries_queued;
