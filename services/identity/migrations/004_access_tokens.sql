-- Integration tokens (crm_pat_...): each acts as its own service user, a
-- users row of kind 'service' that can never log in (no password, excluded
-- from login and from the admin count), so created_by and the directory
-- name the token. The secret is stored only as a SHA-256 hash.

ALTER TABLE users ADD COLUMN kind text NOT NULL DEFAULT 'person' CHECK (kind IN ('person', 'service'));

CREATE TABLE access_tokens (
    id           bigserial PRIMARY KEY,
    name         text        NOT NULL,
    prefix       text        NOT NULL,
    token_hash   bytea       NOT NULL,
    scopes       text[]      NOT NULL,
    role         text        NOT NULL CHECK (role IN ('admin', 'user')),
    user_id      bigint      NOT NULL REFERENCES users (id),
    created_by   bigint      REFERENCES users (id) ON DELETE SET NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    expires_at   timestamptz,
    last_used_at timestamptz,
    revoked_at   timestamptz
);
CREATE UNIQUE INDEX access_tokens_hash_key ON access_tokens (token_hash);

---- create above / drop below ----

DROP TABLE access_tokens;
ALTER TABLE users DROP COLUMN kind;
