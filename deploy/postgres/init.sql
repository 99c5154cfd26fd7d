-- Run once by the PostgreSQL container on first start: one login role and
-- one schema per bounded context, so no service can read another's tables.
CREATE EXTENSION IF NOT EXISTS pg_trgm;
DO $$
DECLARE s text;
BEGIN
  FOREACH s IN ARRAY ARRAY['identity','contacts','leads','deals','contracts','intake','mail'] LOOP
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'crm_' || s) THEN
      EXECUTE format('CREATE ROLE %I LOGIN PASSWORD %L', 'crm_' || s, 'crm_' || s);
    END IF;
    EXECUTE format('CREATE SCHEMA IF NOT EXISTS %I AUTHORIZATION %I', s, 'crm_' || s);
    EXECUTE format('GRANT CONNECT ON DATABASE crm TO %I', 'crm_' || s);
  END LOOP;
END $$;
