-- A local read model of identity's users, fed by identity's events, so a
-- context can validate assigned_to, sort by assignee name and resolve
-- scope=team without calling identity on every request.
CREATE TABLE directory_users (
    id         bigint PRIMARY KEY,
    name       text        NOT NULL,
    email      text        NOT NULL,
    role       text        NOT NULL,
    team_id    bigint,
    active     boolean     NOT NULL,
    updated_at timestamptz NOT NULL
);
CREATE INDEX directory_users_team ON directory_users (team_id);

---- create above / drop below ----

DROP TABLE directory_users;
