-- Each installation's custom fields (pkg/customfield): the values a deal
-- holds, only non-empty ones, in canonical JSON. Expand only: a constant
-- default adds the column without rewriting the table.
ALTER TABLE deals ADD COLUMN custom_fields jsonb NOT NULL DEFAULT '{}';
