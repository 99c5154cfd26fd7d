-- What a non-admin may change: company (everything), team (records of the
-- user's team and unassigned ones) or own (assigned to or created by them).
ALTER TABLE users ADD COLUMN edit_scope text NOT NULL DEFAULT 'company'
    CHECK (edit_scope IN ('company', 'team', 'own'));

---- create above / drop below ----

ALTER TABLE users DROP COLUMN edit_scope;
