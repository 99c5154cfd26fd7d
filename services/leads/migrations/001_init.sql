-- Leads, the denormalised assignee name used for sorting, the qualification
-- saga's persisted progress, and an exact row counter for unfiltered lists.
CREATE EXTENSION IF NOT EXISTS pg_trgm WITH SCHEMA public;

CREATE TABLE leads (
    id                bigserial PRIMARY KEY,
    first_name        text        NOT NULL,
    last_name         text        NOT NULL,
    email             text,
    phone             text,
    company           text,
    job_title         text,
    source            text,
    status            text        NOT NULL DEFAULT 'new'
                      CHECK (status IN ('new', 'contacted', 'qualified', 'disqualified')),
    notes             text,
    tags              text,
    assigned_to       bigint,
    -- Copied from directory_users when assigned and refreshed when identity
    -- renames the user, so sort_by=assigned_to_name is an indexed column.
    assigned_to_name  text,
    disqualify_reason text,
    qualified_at      timestamptz,
    contact_id        bigint,
    company_id        bigint,
    deal_id           bigint,
    created_by        bigint,
    created_at        timestamptz NOT NULL DEFAULT now(),
    updated_at        timestamptz NOT NULL DEFAULT now(),
    -- One lower-cased haystack for search (names, full name, email, phone,
    -- company) behind one trigram index.
    search_text       text GENERATED ALWAYS AS (lower(
        first_name || ' ' || last_name || ' ' || coalesce(email, '') || ' ' ||
        coalesce(phone, '') || ' ' || coalesce(company, ''))) STORED
);

CREATE INDEX leads_search ON leads USING gin (search_text gin_trgm_ops);
CREATE INDEX leads_email ON leads (lower(email));
CREATE INDEX leads_assigned ON leads (assigned_to);

-- Every sort key has one btree index ending in id: list ORDER BY is
-- "<key> <dir>, id <dir>" with PostgreSQL's default null ordering, so a
-- forward scan serves ASC and a backward scan DESC.
CREATE INDEX leads_sort_name ON leads ((lower(first_name || ' ' || last_name)), id);
CREATE INDEX leads_sort_email ON leads ((lower(email)), id);
CREATE INDEX leads_sort_company ON leads ((lower(company)), id);
CREATE INDEX leads_sort_status ON leads (status, id);
CREATE INDEX leads_sort_source ON leads ((lower(source)), id);
CREATE INDEX leads_sort_assignee ON leads ((lower(assigned_to_name)), id);
CREATE INDEX leads_sort_created ON leads (created_at, id);

-- Exact number of leads, maintained by statement-level triggers, so the
-- unfiltered list's total does not count a million rows per request.
CREATE TABLE lead_count (
    singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    n         bigint  NOT NULL
);
INSERT INTO lead_count (singleton, n) VALUES (true, 0);

CREATE FUNCTION lead_count_ins() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE lead_count SET n = n + (SELECT count(*) FROM new_rows);
    RETURN NULL;
END $$;

CREATE FUNCTION lead_count_del() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE lead_count SET n = n - (SELECT count(*) FROM old_rows);
    RETURN NULL;
END $$;

CREATE TRIGGER leads_count_ins AFTER INSERT ON leads
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION lead_count_ins();
CREATE TRIGGER leads_count_del AFTER DELETE ON leads
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION lead_count_del();

-- One row per lead being (or having been) qualified: what each saga step
-- sent and got back, so a retry resends exactly the same idempotent calls.
CREATE TABLE qualifications (
    lead_id      bigint      PRIMARY KEY REFERENCES leads (id) ON DELETE CASCADE,
    state        jsonb       NOT NULL DEFAULT '{}',
    attempts     integer     NOT NULL DEFAULT 0,
    locked_until timestamptz,
    completed_at timestamptz,
    created_at   timestamptz NOT NULL DEFAULT now(),
    updated_at   timestamptz NOT NULL DEFAULT now()
);

---- create above / drop below ----

DROP TABLE qualifications;
DROP TRIGGER leads_count_del ON leads;
DROP TRIGGER leads_count_ins ON leads;
DROP FUNCTION lead_count_del();
DROP FUNCTION lead_count_ins();
DROP TABLE lead_count;
DROP TABLE leads;
