-- When a user's access was last reduced, so every service can refuse
-- access tokens issued before it: access_reduced_at is set by a
-- deactivation or a demotion, tokens_revoked_at by a deactivation only
-- (a demoted admin's token keeps working with the user role).
ALTER TABLE users ADD COLUMN access_reduced_at timestamptz;
ALTER TABLE users ADD COLUMN tokens_revoked_at timestamptz;
CREATE INDEX users_access_reduced ON users (access_reduced_at) WHERE access_reduced_at IS NOT NULL;

---- create above / drop below ----

DROP INDEX users_access_reduced;
ALTER TABLE users DROP COLUMN tokens_revoked_at;
ALTER TABLE users DROP COLUMN access_reduced_at;
