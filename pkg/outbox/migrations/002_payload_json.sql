-- Nothing ever queries inside a payload: it is written once and relayed as
-- text. json keeps the text as given, where jsonb parses and rebuilds it,
-- which was a fifth of a bulk import's cost.
ALTER TABLE outbox ALTER COLUMN payload TYPE json USING payload::json;

---- create above / drop below ----

ALTER TABLE outbox ALTER COLUMN payload TYPE jsonb USING payload::jsonb;
