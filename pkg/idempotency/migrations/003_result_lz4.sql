-- A stored result is a batch's whole answer (some 70 kB for 100 contacts),
-- compressed when written: with lz4 that costs a tenth of PostgreSQL's
-- default pglz (docs/benchmarks.md, contact batch upsert). Rows written
-- before keep pglz; both read back the same. A server built without lz4
-- keeps pglz.
DO $$
BEGIN
    ALTER TABLE idempotency_keys ALTER COLUMN result SET COMPRESSION lz4;
EXCEPTION WHEN feature_not_supported OR invalid_parameter_value OR syntax_error THEN
    NULL;
END
$$;

---- create above / drop below ----

DO $$
BEGIN
    ALTER TABLE idempotency_keys ALTER COLUMN result SET COMPRESSION default;
EXCEPTION WHEN syntax_error THEN
    NULL;
END
$$;
