-- One login role and one schema per bounded context, so no service can read
-- another's tables, and pg_trgm in public (contacts, leads and deals create
-- it in their first migration; a role that only owns its schema may not).
-- The single copy of this SQL: docker-compose.yml mounts it as the
-- PostgreSQL container's init script (run once, on an empty data directory),
-- and deploy/k8s/base runs it in the crm-db-bootstrap Job (deploy/postgres/
-- kustomization.yaml turns it into a ConfigMap). Idempotent: safe to rerun.
-- Roles get no password here: compose sets dev passwords in
-- dev-passwords.sql, the Job sets those of the crm-db secret's URLs.
-- Run it connected to the application database (crm) as a role that may
-- create roles, schemas and the extension.
CREATE EXTENSION IF NOT EXISTS pg_trgm WITH SCHEMA public;
DO $$
DECLARE s text;
BEGIN
  FOREACH s IN ARRAY ARRAY['identity','contacts','leads','deals','contracts','intake','mail','webhooks'] LOOP
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'crm_' || s) THEN
      EXECUTE format('CREATE ROLE %I LOGIN', 'crm_' || s);
    END IF;
    EXECUTE format('CREATE SCHEMA IF NOT EXISTS %I AUTHORIZATION %I', s, 'crm_' || s);
    EXECUTE format('ALTER SCHEMA %I OWNER TO %I', s, 'crm_' || s);
    EXECUTE format('GRANT CONNECT ON DATABASE %I TO %I', current_database(), 'crm_' || s);
  END LOOP;
END $$;
