-- Hands the audit log to a role nobody logs in as, once identity has
-- created it (identity's migration 005): identity keeps SELECT and INSERT,
-- and can no longer disable the table's append-only triggers, grant itself
-- UPDATE or DELETE again, or replace the trigger function — only the owner
-- may, and crm_audit_owner cannot log in. (identity, owning its schema,
-- could still drop the table; the chain's verification and the operator's
-- backups are the answer to that.)
--
-- Run it connected to the application database as a role that may create
-- roles and change owners (the bootstrap's admin), after identity has
-- started once. Until then it fails, so the crm-db-harden Job retries.
-- Idempotent: safe to rerun. A later identity migration altering audit_log
-- must be run as crm_audit_owner.
DO $$
BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'crm_audit_owner') THEN
    CREATE ROLE crm_audit_owner NOLOGIN;
  END IF;
  IF to_regclass('identity.audit_log') IS NULL THEN
    RAISE EXCEPTION 'identity.audit_log does not exist yet: identity has not migrated';
  END IF;
  ALTER TABLE identity.audit_log OWNER TO crm_audit_owner;
  ALTER FUNCTION identity.audit_log_refuse() OWNER TO crm_audit_owner;
  REVOKE ALL ON identity.audit_log FROM crm_identity;
  GRANT SELECT, INSERT ON identity.audit_log TO crm_identity;
  -- The owner keeps no way around the triggers either, but it needs its
  -- schema to be reachable for nothing: no USAGE grant.
END $$;
