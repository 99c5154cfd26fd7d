-- Who created each contact and company, for the "own" edit scope. Records
-- made before this migration, by an import or by another context keep
-- null: only their assignee (contacts), an admin or a wider scope may
-- change them.
ALTER TABLE contacts ADD COLUMN created_by bigint;
ALTER TABLE companies ADD COLUMN created_by bigint;

---- create above / drop below ----

ALTER TABLE companies DROP COLUMN created_by;
ALTER TABLE contacts DROP COLUMN created_by;
