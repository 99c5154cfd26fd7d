-- Deal stages, deals, quotes and their line items. Money is stored as
-- numeric (never float) and rounded to the currency's minor unit by the
-- service; numeric(19,4) holds every ISO 4217 minor unit in use (0..4).
CREATE EXTENSION IF NOT EXISTS pg_trgm WITH SCHEMA public;

CREATE TABLE deal_stages (
    id         bigserial PRIMARY KEY,
    name       text        NOT NULL,
    position   integer     NOT NULL,
    outcome    text        NOT NULL DEFAULT 'open' CHECK (outcome IN ('open', 'won', 'lost')),
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX deal_stages_name ON deal_stages (lower(name));
-- Positions are dense (1..n); reordering shifts neighbours inside one
-- transaction, so the uniqueness check is deferred to commit.
ALTER TABLE deal_stages ADD CONSTRAINT deal_stages_position UNIQUE (position) DEFERRABLE INITIALLY DEFERRED;

INSERT INTO deal_stages (name, position, outcome) VALUES
    ('Prospecting', 1, 'open'),
    ('Qualification', 2, 'open'),
    ('Proposal', 3, 'open'),
    ('Negotiation', 4, 'open'),
    ('Closed Won', 5, 'won'),
    ('Closed Lost', 6, 'lost');

CREATE TABLE deals (
    id                  bigserial PRIMARY KEY,
    title               text          NOT NULL,
    value               numeric(19,4) NOT NULL DEFAULT 0 CHECK (value >= 0),
    currency            char(3)       NOT NULL DEFAULT 'USD',
    stage_id            bigint        NOT NULL REFERENCES deal_stages (id) ON DELETE RESTRICT,
    status              text          NOT NULL CHECK (status IN ('open', 'won', 'lost')),
    company_id          bigint,
    company_name        text,
    contact_id          bigint,
    expected_close_date date,
    assigned_to         bigint,
    source_lead_id      bigint,
    created_at          timestamptz   NOT NULL DEFAULT now(),
    updated_at          timestamptz   NOT NULL DEFAULT now()
);
CREATE INDEX deals_stage ON deals (stage_id);
CREATE INDEX deals_company ON deals (company_id);
CREATE INDEX deals_contact ON deals (contact_id);
CREATE INDEX deals_assigned ON deals (assigned_to);
CREATE INDEX deals_status ON deals (status);
CREATE INDEX deals_created ON deals (created_at, id);
CREATE INDEX deals_title_trgm ON deals USING gin (lower(title) gin_trgm_ops);
CREATE INDEX deals_company_name_trgm ON deals USING gin (lower(company_name) gin_trgm_ops);

-- One counter row per year: the next quote number is taken by updating the
-- row inside the quote's transaction, so numbers are gapless and unique
-- under concurrency (a rolled-back quote gives its number back).
CREATE TABLE quote_counters (
    year integer PRIMARY KEY,
    last integer NOT NULL
);

CREATE TABLE quotes (
    id           bigserial PRIMARY KEY,
    deal_id      bigint        NOT NULL REFERENCES deals (id) ON DELETE CASCADE,
    quote_number text          NOT NULL UNIQUE,
    status       text          NOT NULL DEFAULT 'draft' CHECK (status IN ('draft', 'sent', 'accepted', 'declined')),
    currency     char(3)       NOT NULL,
    valid_until  date,
    subtotal     numeric(19,4) NOT NULL,
    tax_rate     numeric(7,4)  NOT NULL DEFAULT 0,
    tax          numeric(19,4) NOT NULL,
    total        numeric(19,4) NOT NULL,
    created_at   timestamptz   NOT NULL DEFAULT now(),
    updated_at   timestamptz   NOT NULL DEFAULT now()
);
CREATE INDEX quotes_deal ON quotes (deal_id, created_at DESC, id DESC);
-- At most one accepted quote per deal: accepting another declines it.
CREATE UNIQUE INDEX quotes_one_accepted ON quotes (deal_id) WHERE status = 'accepted';

CREATE TABLE quote_line_items (
    quote_id    bigint        NOT NULL REFERENCES quotes (id) ON DELETE CASCADE,
    position    integer       NOT NULL,
    description text          NOT NULL,
    quantity    numeric(19,4) NOT NULL CHECK (quantity > 0),
    unit_price  numeric(19,4) NOT NULL CHECK (unit_price >= 0),
    amount      numeric(19,4) NOT NULL,
    PRIMARY KEY (quote_id, position)
);

---- create above / drop below ----

DROP TABLE quote_line_items;
DROP TABLE quotes;
DROP TABLE quote_counters;
DROP TABLE deals;
DROP TABLE deal_stages;
