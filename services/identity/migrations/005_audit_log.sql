-- The audit log: an append-only record of the security-relevant actions of
-- every context (identityapi.AuditActions). Identity appends its own in the
-- transaction of the action; the other contexts' entries arrive on the
-- crm:audit stream and are appended once each (context, source_id).
--
-- Each entry carries the SHA-256 of the previous one (prev_hash; 32 zero
-- bytes for the first) and its own hash, SHA-256(prev_hash || canonical
-- encoding of its fields), computed by the identity service (store/audit.go
-- defines the encoding, used by append and verify alike). Appends are
-- serialised by the one row of audit_head, locked FOR UPDATE, which also
-- holds the last id and hash, so ids are dense and a missing tail shows.
--
-- Protection: no route changes the log, the triggers below refuse UPDATE,
-- DELETE and TRUNCATE to everyone (superusers included, unless they
-- disable triggers), and those privileges are revoked. The owner of a
-- table may still disable its triggers or grant itself the privileges
-- again: an operator should make audit_log owned by a role the identity
-- service does not log in as, leaving identity SELECT and INSERT on it
-- (and SELECT, UPDATE on audit_head):
--
--   ALTER TABLE identity.audit_log OWNER TO crm_audit_owner;
--   GRANT SELECT, INSERT ON identity.audit_log TO crm_identity;
--
-- (a later migration altering audit_log must then be run as that owner).

CREATE TABLE audit_log (
    id          bigint      PRIMARY KEY,
    at          timestamptz NOT NULL,
    actor       jsonb       NOT NULL,
    action      text        NOT NULL,
    target_type text        NOT NULL DEFAULT '',
    target_id   text        NOT NULL DEFAULT '',
    details     jsonb       NOT NULL DEFAULT '{}',
    ip          text        NOT NULL DEFAULT '',
    user_agent  text        NOT NULL DEFAULT '',
    request_id  text        NOT NULL DEFAULT '',
    context     text        NOT NULL,
    source_id   text,
    prev_hash   bytea       NOT NULL,
    hash        bytea       NOT NULL
);
-- An entry of another context is appended once however often it arrives.
CREATE UNIQUE INDEX audit_log_source ON audit_log (context, source_id);
CREATE INDEX audit_log_action ON audit_log (action, id);
CREATE INDEX audit_log_actor ON audit_log ((actor->>'id'), id);
CREATE INDEX audit_log_at ON audit_log (at);

CREATE TABLE audit_head (
    one       boolean PRIMARY KEY DEFAULT true CHECK (one),
    last_id   bigint  NOT NULL,
    last_hash bytea   NOT NULL
);
INSERT INTO audit_head (last_id, last_hash) VALUES (0, '\x0000000000000000000000000000000000000000000000000000000000000000');

CREATE FUNCTION audit_log_refuse() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'audit_log is append-only: % refused', TG_OP USING ERRCODE = 'insufficient_privilege';
END
$$;
CREATE TRIGGER audit_log_append_only BEFORE UPDATE OR DELETE ON audit_log
    FOR EACH STATEMENT EXECUTE FUNCTION audit_log_refuse();
CREATE TRIGGER audit_log_no_truncate BEFORE TRUNCATE ON audit_log
    FOR EACH STATEMENT EXECUTE FUNCTION audit_log_refuse();
REVOKE UPDATE, DELETE, TRUNCATE ON audit_log FROM PUBLIC;
REVOKE UPDATE, DELETE, TRUNCATE ON audit_log FROM CURRENT_USER;

---- create above / drop below ----

DROP TABLE audit_head;
DROP TABLE audit_log;
DROP FUNCTION audit_log_refuse();
