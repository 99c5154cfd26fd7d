-- The W3C trace context of the transaction that wrote the event, relayed
-- with it so its consumers continue the same trace; NULL when untraced.
ALTER TABLE outbox ADD COLUMN trace json;

---- create above / drop below ----

ALTER TABLE outbox DROP COLUMN trace;
