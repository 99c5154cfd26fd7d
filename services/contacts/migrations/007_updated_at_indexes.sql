-- Incremental sync (updated_since, sort_by=updated_at, after_id; see
-- docs/api.md): the status-led index serves the list's per-status merge
-- like the other sort keys (carrying source for the same reason), the
-- plain one a filtered or scoped list, and companies get theirs.
CREATE INDEX contacts_status_updated ON contacts (status, updated_at, id) INCLUDE (source);
CREATE INDEX contacts_sort_updated ON contacts (updated_at, id);
CREATE INDEX companies_updated ON companies (updated_at, id);

-- A company's new name reaches its contacts' company_name: that changes
-- the contact as the API shows it, so its updated_at moves too and a sync
-- of changed contacts sees the new name.
CREATE OR REPLACE FUNCTION companies_propagate_name() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE contacts SET company_name = NEW.name, updated_at = now() WHERE company_id = NEW.id;
    RETURN NEW;
END $$;

---- create above / drop below ----

CREATE OR REPLACE FUNCTION companies_propagate_name() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE contacts SET company_name = NEW.name WHERE company_id = NEW.id;
    RETURN NEW;
END $$;
DROP INDEX contacts_status_updated, contacts_sort_updated, companies_updated;
