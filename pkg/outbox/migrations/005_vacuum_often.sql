-- The relay marks each event published, which leaves its entry in
-- outbox_unpublished pointing at a dead row version until VACUUM: with the
-- default thresholds (20 % of the table) a busy outbox keeps tens of
-- thousands of them at the head of the index, and every relay pass walks
-- them before it finds the first unpublished event. Vacuum after a fixed
-- number of dead rows instead, whatever the table's size.
ALTER TABLE outbox SET (autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 5000);

---- create above / drop below ----

ALTER TABLE outbox RESET (autovacuum_vacuum_scale_factor, autovacuum_vacuum_threshold);
