-- A batch handed to a worker is one row here instead of a mark on each of
-- its deliveries. Marking and unmarking every delivery rewrote it (and all
-- its index entries) twice more per attempt, which made handing out work
-- cost more than sending it. deliveries and attempts list the batch's
-- deliveries in sending order with the attempt each was handed out for; a
-- worker's outcome applies only to deliveries still listed here, so a
-- duplicate or superseded task changes nothing. A ping is a batch of one.
--
-- Stop the webhooks processes of the previous version before this runs:
-- they read the columns it drops.
CREATE TABLE batches (
    id              bigint      PRIMARY KEY DEFAULT nextval('delivery_batches'),
    subscription_id bigint      NOT NULL REFERENCES subscriptions (id) ON DELETE CASCADE,
    deliveries      bigint[]    NOT NULL,
    attempts        integer[]   NOT NULL,
    queued_at       timestamptz NOT NULL DEFAULT now(),
    CHECK (cardinality(deliveries) > 0 AND cardinality(deliveries) = cardinality(attempts))
);

-- Batches in flight per subscription (the per-endpoint cap).
CREATE INDEX batches_subscription ON batches (subscription_id);
-- The sweeper of lost batches.
CREATE INDEX batches_queued ON batches (queued_at);

-- What is in flight now keeps its batch id (its task in Redis names it); a
-- ping queued outside any batch becomes a batch of its own.
INSERT INTO batches (id, subscription_id, deliveries, attempts, queued_at)
SELECT batch, subscription_id, array_agg(id ORDER BY next_attempt_at, id), array_agg(attempt ORDER BY next_attempt_at, id),
    min(coalesce(queued_at, now()))
FROM (SELECT coalesce(queued_batch, -id) AS batch, * FROM deliveries WHERE queued AND status = 'pending') q
GROUP BY batch, subscription_id;

DROP INDEX deliveries_due;
DROP INDEX deliveries_batches;
ALTER TABLE deliveries DROP COLUMN queued, DROP COLUMN queued_at, DROP COLUMN queued_batch;

-- The dispatcher's scan of what is due, per subscription; deliveries in a
-- batch are skipped by id.
CREATE INDEX deliveries_due ON deliveries (subscription_id, next_attempt_at, id) WHERE status = 'pending';
