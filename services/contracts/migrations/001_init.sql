-- Contract templates: sanitised HTML with merge tags, plus the plain-text
-- header and footer cells of the rendered pages.
CREATE TABLE templates (
    id                  bigserial PRIMARY KEY,
    name                text        NOT NULL,
    content             text        NOT NULL,
    number_prefix       text        NOT NULL DEFAULT 'CTR',
    default_term_months integer     NOT NULL DEFAULT 36 CHECK (default_term_months > 0),
    header_left         text        NOT NULL DEFAULT '',
    header_center       text        NOT NULL DEFAULT '',
    header_right        text        NOT NULL DEFAULT '',
    footer_left         text        NOT NULL DEFAULT '',
    footer_center       text        NOT NULL DEFAULT '',
    footer_right        text        NOT NULL DEFAULT '',
    created_by          bigint,
    created_at          timestamptz NOT NULL DEFAULT now(),
    updated_at          timestamptz NOT NULL DEFAULT now()
);

-- One counter row per (prefix, year). A contract takes its number by
-- incrementing the row in the transaction that inserts the contract, so the
-- row lock serialises concurrent creations and a rollback gives the number
-- back: numbers are gapless and never reused.
CREATE TABLE number_counters (
    prefix     text    NOT NULL,
    year       integer NOT NULL,
    last_value bigint  NOT NULL,
    PRIMARY KEY (prefix, year)
);

CREATE TABLE contracts (
    id               bigserial PRIMARY KEY,
    contract_number  text        NOT NULL,
    title            text        NOT NULL,
    deal_id          bigint      NOT NULL,
    deal_title       text        NOT NULL DEFAULT '',
    company_id       bigint,
    company_name     text,
    template_id      bigint      NOT NULL REFERENCES templates (id) ON DELETE RESTRICT,
    status           text        NOT NULL DEFAULT 'draft'
        CHECK (status IN ('draft', 'active', 'executed', 'expired', 'terminated', 'archived')),
    start_date       date,
    end_date         date,
    effective_date   date        NOT NULL,
    termination_date date        NOT NULL,
    term_months      integer     NOT NULL CHECK (term_months > 0),
    auto_renew       boolean     NOT NULL DEFAULT false,
    partner_ref      text,
    content          text        NOT NULL DEFAULT '',
    unresolved_tags  text[]      NOT NULL DEFAULT '{}',
    -- Header and footer cells with merge tags resolved at generation time;
    -- the page and page-count placeholders are kept for the renderer.
    header_cells     text[]      NOT NULL DEFAULT '{"","",""}',
    footer_cells     text[]      NOT NULL DEFAULT '{"","",""}',
    created_by       bigint,
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT contracts_number_key UNIQUE (contract_number),
    CONSTRAINT contracts_dates CHECK (end_date IS NULL OR start_date IS NULL OR end_date >= start_date)
);
CREATE INDEX contracts_deal ON contracts (deal_id, id);
CREATE INDEX contracts_template ON contracts (template_id);
CREATE INDEX contracts_status_termination ON contracts (status, termination_date);
CREATE INDEX contracts_created ON contracts (created_at, id);

-- Search is a case-insensitive substring match; a trigram index serves it
-- when pg_trgm is installed (the operator installs it in public).
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'pg_trgm') THEN
        CREATE INDEX contracts_search ON contracts USING gin (
            (lower(contract_number || ' ' || title || ' ' || deal_title || ' ' ||
                   coalesce(company_name, '') || ' ' || coalesce(partner_ref, ''))) gin_trgm_ops);
    END IF;
END
$$;

-- The signed copy: metadata here, bytes in 1 MiB chunks below, so an upload
-- streams into PostgreSQL and a download streams out in constant memory.
CREATE TABLE executed_files (
    contract_id bigint      PRIMARY KEY REFERENCES contracts (id) ON DELETE CASCADE,
    filename    text        NOT NULL,
    size        bigint      NOT NULL,
    sha256      text        NOT NULL,
    uploaded_by bigint,
    uploaded_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE executed_file_chunks (
    contract_id bigint  NOT NULL REFERENCES executed_files (contract_id) ON DELETE CASCADE,
    seq         integer NOT NULL,
    data        bytea   NOT NULL,
    PRIMARY KEY (contract_id, seq)
);

---- create above / drop below ----

DROP TABLE executed_file_chunks;
DROP TABLE executed_files;
DROP TABLE contracts;
DROP TABLE number_counters;
DROP TABLE templates;
