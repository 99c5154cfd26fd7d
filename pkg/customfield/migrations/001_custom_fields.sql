-- Custom-field definitions of the objects the owning context keeps, and
-- the claims that make a unique field an external id. The values live in
-- each record table's custom_fields jsonb column (the context's own
-- migration adds it).
CREATE TABLE custom_field_definitions (
    object      text        NOT NULL,
    name        text        NOT NULL,
    label       text        NOT NULL,
    type        text        NOT NULL,
    options     jsonb       NOT NULL DEFAULT '[]',
    required    boolean     NOT NULL DEFAULT false,
    is_unique   boolean     NOT NULL DEFAULT false,
    description text        NOT NULL DEFAULT '',
    position    integer     NOT NULL DEFAULT 0,
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (object, name)
);

-- One row per (unique field, value): the primary key is the uniqueness,
-- checked in the writing transaction, and the lookup of an external id.
CREATE TABLE custom_field_unique (
    object    text   NOT NULL,
    name      text   NOT NULL,
    value     text   NOT NULL,
    record_id bigint NOT NULL,
    PRIMARY KEY (object, name, value)
);
CREATE INDEX custom_field_unique_record ON custom_field_unique (object, record_id);
