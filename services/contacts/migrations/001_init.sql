-- Trigram indexes back the substring search (q on the lists). The extension lives
-- in public, which every service's search_path includes.
CREATE EXTENSION IF NOT EXISTS pg_trgm WITH SCHEMA public;

-- norm_name folds a company name for matching: lower case, punctuation to
-- spaces, spaces collapsed ("ACME inc." and "Acme, Inc." both give
-- "acme inc"). IMMUTABLE so a generated column and its index can use it.
CREATE FUNCTION norm_name(s text) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE STRICT
    RETURN btrim(regexp_replace(lower(s), '[^[:alnum:]]+', ' ', 'g'));

CREATE TABLE companies (
    id              bigserial PRIMARY KEY,
    name            text        NOT NULL,
    domain          text,
    website         text,
    phone           text,
    industry        text,
    address_street  text,
    address_city    text,
    address_state   text,
    address_zip     text,
    address_country text,
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now(),
    name_norm       text GENERATED ALWAYS AS (norm_name(name)) STORED,
    search_text     text GENERATED ALWAYS AS (lower(name || E'\n' || coalesce(domain, '') || E'\n' ||
                        coalesce(website, '') || E'\n' || coalesce(phone, '') || E'\n' || coalesce(industry, ''))) STORED
);
CREATE INDEX companies_name_norm_trgm ON companies USING gin (name_norm gin_trgm_ops);
CREATE INDEX companies_search_trgm ON companies USING gin (search_text gin_trgm_ops);
CREATE INDEX companies_lower_name ON companies (lower(name), id);
CREATE INDEX companies_lower_name_desc ON companies (lower(name) DESC NULLS LAST, id DESC);
CREATE INDEX companies_created ON companies (created_at, id);
CREATE INDEX companies_created_desc ON companies (created_at DESC NULLS LAST, id DESC);

-- company_name is denormalised onto the contact (kept by triggers below) so
-- search and sort by company never join. search_text concatenates every
-- searchable field, lower-cased, with newlines between fields so a search
-- term never matches across two fields (first and last name are joined by a
-- space, so the full name matches).
CREATE TABLE contacts (
    id              bigserial PRIMARY KEY,
    first_name      text        NOT NULL,
    last_name       text        NOT NULL,
    email           text,
    phone           text,
    mobile          text,
    job_title       text,
    company_id      bigint REFERENCES companies (id) ON DELETE SET NULL,
    company_name    text,
    address_street  text,
    address_city    text,
    address_state   text,
    address_zip     text,
    address_country text,
    notes           text,
    tags            text,
    status          text        NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'inactive')),
    source          text,
    assigned_to     bigint,
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now(),
    sort_name       text GENERATED ALWAYS AS (lower(first_name || ' ' || last_name)) STORED,
    search_text     text GENERATED ALWAYS AS (lower(first_name || ' ' || last_name || E'\n' ||
                        coalesce(email, '') || E'\n' || coalesce(phone, '') || E'\n' ||
                        coalesce(mobile, '') || E'\n' || coalesce(company_name, ''))) STORED
);
CREATE INDEX contacts_search_trgm ON contacts USING gin (search_text gin_trgm_ops);
CREATE INDEX contacts_lower_email ON contacts (lower(email));
-- One index per sort key and direction, matching listq's
-- "ORDER BY <key> <dir> NULLS LAST, id <dir>", so every page is a short
-- index scan whatever the sort.
CREATE INDEX contacts_sort_name ON contacts (sort_name, id);
CREATE INDEX contacts_sort_name_desc ON contacts (sort_name DESC NULLS LAST, id DESC);
CREATE INDEX contacts_sort_email ON contacts (lower(email), id);
CREATE INDEX contacts_sort_email_desc ON contacts (lower(email) DESC NULLS LAST, id DESC);
CREATE INDEX contacts_sort_phone ON contacts (phone, id);
CREATE INDEX contacts_sort_phone_desc ON contacts (phone DESC NULLS LAST, id DESC);
CREATE INDEX contacts_sort_company ON contacts (lower(company_name), id);
CREATE INDEX contacts_sort_company_desc ON contacts (lower(company_name) DESC NULLS LAST, id DESC);
CREATE INDEX contacts_sort_status ON contacts (status, id);
CREATE INDEX contacts_sort_status_desc ON contacts (status DESC NULLS LAST, id DESC);
CREATE INDEX contacts_sort_created ON contacts (created_at, id);
CREATE INDEX contacts_sort_created_desc ON contacts (created_at DESC NULLS LAST, id DESC);
-- Filters. company_id's index also finds a company's primary (earliest) contact.
CREATE INDEX contacts_company ON contacts (company_id, created_at, id);
CREATE INDEX contacts_assigned ON contacts (assigned_to);
CREATE INDEX contacts_source ON contacts (source);

-- Keep the denormalised company name right on every write path (API,
-- import, internal API) without trusting the caller.
CREATE FUNCTION contacts_set_company_name() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.company_id IS NULL THEN
        NEW.company_name := NULL;
    ELSE
        SELECT name INTO NEW.company_name FROM companies WHERE id = NEW.company_id;
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER contacts_company_name BEFORE INSERT OR UPDATE OF company_id ON contacts
    FOR EACH ROW EXECUTE FUNCTION contacts_set_company_name();

CREATE FUNCTION companies_propagate_name() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE contacts SET company_name = NEW.name WHERE company_id = NEW.id;
    RETURN NEW;
END $$;
CREATE TRIGGER companies_name_changed AFTER UPDATE OF name ON companies
    FOR EACH ROW WHEN (OLD.name IS DISTINCT FROM NEW.name) EXECUTE FUNCTION companies_propagate_name();

---- create above / drop below ----

DROP TABLE contacts;
DROP FUNCTION contacts_set_company_name();
DROP FUNCTION companies_propagate_name();
DROP TABLE companies;
DROP FUNCTION norm_name(text);
