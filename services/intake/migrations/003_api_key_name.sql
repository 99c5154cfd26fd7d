-- The name of the API key a submission came with, as it was then: with
-- api_key_id, the actor leads records the lead's creation under (record
-- history), also when the retry job delivers the submission later, with
-- no request around. Its channel is always intake. Empty for submissions
-- stored before this migration (their leads record the key's id alone).
ALTER TABLE submissions ADD COLUMN api_key_name text NOT NULL DEFAULT '';

---- create above / drop below ----

ALTER TABLE submissions DROP COLUMN api_key_name;
