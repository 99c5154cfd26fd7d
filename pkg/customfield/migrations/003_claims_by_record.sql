-- A record's claims were indexed (object, record_id). Before the table
-- had statistics the planner read that index with only object as its
-- condition for an external-id lookup (object, name, value), filtering
-- every claim of the object (100-550 ms at 100,000 claims) instead of
-- using the primary key. Leading with record_id, the index answers only
-- what it is for: a record's claims (Claim, Release).
CREATE INDEX custom_field_unique_holder ON custom_field_unique (record_id, object);
DROP INDEX custom_field_unique_record;

---- create above / drop below ----

CREATE INDEX custom_field_unique_record ON custom_field_unique (object, record_id);
DROP INDEX custom_field_unique_holder;
