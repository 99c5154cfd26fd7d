-- Incremental sync (updated_since, sort_by=updated_at, after_id; see
-- docs/api.md): one btree range over (updated_at, id) answers both the
-- filter and the keyset order.
CREATE INDEX contracts_updated ON contracts (updated_at, id);

---- create above / drop below ----

DROP INDEX contracts_updated;
