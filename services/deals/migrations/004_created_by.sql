-- Who created each deal, for the "own" edit scope (quotes follow their
-- deal). Deals made before this migration or by another context (a lead's
-- qualification) keep null: only their assignee, an admin or a wider
-- scope may change them.
ALTER TABLE deals ADD COLUMN created_by bigint;

---- create above / drop below ----

ALTER TABLE deals DROP COLUMN created_by;
