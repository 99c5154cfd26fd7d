-- Notes and tasks attached to a parent record of the owning context
-- (contact, lead or contract). parent_type keeps one table per schema
-- usable by any context; the owning service guarantees the parent exists.
CREATE TABLE notes (
    id          bigserial PRIMARY KEY,
    parent_type text        NOT NULL,
    parent_id   bigint      NOT NULL,
    content     text        NOT NULL,
    created_by  bigint,
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX notes_parent ON notes (parent_type, parent_id, created_at DESC, id DESC);

CREATE TABLE tasks (
    id           bigserial PRIMARY KEY,
    parent_type  text        NOT NULL,
    parent_id    bigint      NOT NULL,
    title        text        NOT NULL,
    description  text,
    due_date     date,
    due_time     text,
    priority     text        NOT NULL DEFAULT 'medium' CHECK (priority IN ('low', 'medium', 'high')),
    status       text        NOT NULL DEFAULT 'open' CHECK (status IN ('open', 'completed')),
    completed_at timestamptz,
    assigned_to  bigint,
    contact_id   bigint,
    company_id   bigint,
    deal_id      bigint,
    lead_id      bigint,
    contract_id  bigint,
    created_by   bigint,
    created_at   timestamptz NOT NULL DEFAULT now(),
    updated_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX tasks_parent ON tasks (parent_type, parent_id, id);
CREATE INDEX tasks_assigned ON tasks (assigned_to, status, due_date);

---- create above / drop below ----

DROP TABLE tasks;
DROP TABLE notes;
