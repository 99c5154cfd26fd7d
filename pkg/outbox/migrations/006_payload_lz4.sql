-- A contacts batch call's event carries its hundred records (some 60 kB),
-- compressed when written and read back by the relay: lz4 costs a fraction
-- of PostgreSQL's default pglz both ways, as for idempotency results. Rows
-- written before keep pglz; both read back the same. A server built
-- without lz4 keeps pglz.
DO $$
BEGIN
    ALTER TABLE outbox ALTER COLUMN payload SET COMPRESSION lz4;
EXCEPTION WHEN feature_not_supported OR invalid_parameter_value OR syntax_error THEN
    NULL;
END
$$;

---- create above / drop below ----

DO $$
BEGIN
    ALTER TABLE outbox ALTER COLUMN payload SET COMPRESSION default;
EXCEPTION WHEN syntax_error THEN
    NULL;
END
$$;
