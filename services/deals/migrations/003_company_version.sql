-- The version of the company a deal's company_name was taken from:
-- contacts' updated_at of the company, from the company.created/updated
-- event or the lookup that set the name. An event older than the stored
-- version is ignored, so redelivered or reordered events never roll a name
-- back. NULL: unknown (rows written before this column, or a lookup
-- without updated_at); any versioned event then applies.
ALTER TABLE deals ADD COLUMN company_updated_at timestamptz;

---- create above / drop below ----

ALTER TABLE deals DROP COLUMN company_updated_at;
