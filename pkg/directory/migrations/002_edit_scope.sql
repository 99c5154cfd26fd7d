-- Each user's edit scope (company, team or own), published by identity,
-- decides which records a non-admin may change.
ALTER TABLE directory_users ADD COLUMN edit_scope text NOT NULL DEFAULT 'company';

---- create above / drop below ----

ALTER TABLE directory_users DROP COLUMN edit_scope;
