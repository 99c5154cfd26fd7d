-- A subscription belongs to whoever created it (created_by: a person, or
-- the service user an integration token acts as). owner_scopes are the
-- token's scopes when it created the subscription; NULL is a person with
-- the admin role, who may read every event type (and rows made before
-- owners were recorded, whose creator's scopes are not known).
ALTER TABLE subscriptions ADD COLUMN owner_scopes text[];

-- A short SHA-256 prefix of the current signing secret, shown instead of
-- its first characters (key material). Rows made before it are filled in
-- by the service at start-up, which can open the sealed secret; until
-- then it is NULL.
ALTER TABLE subscriptions ADD COLUMN secret_fingerprint text;

-- secret_prefix stays (the previous release reads it) but no longer holds
-- key material: every row shows the scheme only.
UPDATE subscriptions SET secret_prefix = 'whsec_' WHERE secret_prefix <> 'whsec_';

-- A token's list of its own subscriptions, newest first, and the per-owner
-- count.
CREATE INDEX subscriptions_owner ON subscriptions (created_by, created_at DESC, id DESC);

-- What webhooks knows of each owner from identity's user.* events, so a
-- revoked token's or a deactivated user's subscriptions are disabled when
-- the event arrives, a late or repeated event changes nothing (updated_at
-- only moves forward), and an admin cannot re-enable a subscription whose
-- owner lost access.
CREATE TABLE subscription_owners (
    id         bigint PRIMARY KEY,
    active     boolean     NOT NULL,
    admin      boolean     NOT NULL,
    updated_at timestamptz NOT NULL
);
