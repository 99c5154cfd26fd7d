-- Identity owns users, teams, refresh tokens, signing keys and API keys.

CREATE TABLE teams (
    id         bigserial PRIMARY KEY,
    name       text        NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now()
);
-- Team names are unique regardless of case.
CREATE UNIQUE INDEX teams_name_key ON teams (lower(name));

CREATE TABLE users (
    id            bigserial PRIMARY KEY,
    name          text        NOT NULL,
    email         text        NOT NULL,
    password_hash text        NOT NULL,
    role          text        NOT NULL CHECK (role IN ('admin', 'user')),
    team_id       bigint      REFERENCES teams (id) ON DELETE SET NULL,
    active        boolean     NOT NULL DEFAULT true,
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now()
);
-- Emails are unique case-insensitively; lookups use lower(email).
CREATE UNIQUE INDEX users_email_key ON users (lower(email));
CREATE INDEX users_team ON users (team_id);

-- Refresh tokens are opaque secrets stored only as SHA-256 hashes. Every
-- rotation adds a row to the same family; presenting a rotated token again
-- revokes the family (theft detection).
CREATE TABLE refresh_tokens (
    id         bigserial PRIMARY KEY,
    token_hash bytea       NOT NULL,
    family_id  uuid        NOT NULL,
    user_id    bigint      NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    created_at timestamptz NOT NULL DEFAULT now(),
    expires_at timestamptz NOT NULL,
    rotated_at timestamptz,
    revoked_at timestamptz
);
CREATE UNIQUE INDEX refresh_tokens_hash_key ON refresh_tokens (token_hash);
CREATE INDEX refresh_tokens_family ON refresh_tokens (family_id);
CREATE INDEX refresh_tokens_user ON refresh_tokens (user_id) WHERE revoked_at IS NULL;
CREATE INDEX refresh_tokens_expires ON refresh_tokens (expires_at);

-- Ed25519 signing keys. private_key is AES-256-GCM ciphertext (nonce
-- prefixed, kid as additional data) when encryption = 'aes-256-gcm'.
CREATE TABLE signing_keys (
    kid         text        PRIMARY KEY,
    public_key  bytea       NOT NULL,
    private_key bytea       NOT NULL,
    encryption  text        NOT NULL CHECK (encryption IN ('none', 'aes-256-gcm')),
    created_at  timestamptz NOT NULL DEFAULT now(),
    retired_at  timestamptz
);
-- At most one active (signing) key.
CREATE UNIQUE INDEX signing_keys_one_active ON signing_keys ((true)) WHERE retired_at IS NULL;

CREATE TABLE api_keys (
    id                    bigserial PRIMARY KEY,
    name                  text        NOT NULL,
    prefix                text        NOT NULL,
    key_hash              bytea       NOT NULL,
    rate_limit_per_minute integer     NOT NULL CHECK (rate_limit_per_minute BETWEEN 1 AND 100000),
    allowed_origins       text[]      NOT NULL DEFAULT '{}',
    created_by            bigint      REFERENCES users (id) ON DELETE SET NULL,
    created_at            timestamptz NOT NULL DEFAULT now(),
    revoked_at            timestamptz
);
CREATE UNIQUE INDEX api_keys_hash_key ON api_keys (key_hash);

---- create above / drop below ----

DROP TABLE api_keys;
DROP TABLE signing_keys;
DROP TABLE refresh_tokens;
DROP TABLE users;
DROP TABLE teams;
