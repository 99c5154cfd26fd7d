-- Sort indexes lead with status. A status filter with any sort key is then
-- one short index range, whatever the correlation between the two (the
-- names a million-row list shows first can all be active, so walking a
-- plain (sort_name, id) index for status=inactive read 200,000 rows).
-- Without a status filter the store merges the two statuses' ranges
-- (MergeAppend of two index scans, status has exactly two values), so one
-- index per sort key still serves every list, and no index is added.
-- (status, id) from 001 keeps serving sort_by=status.
DROP INDEX contacts_sort_name;
DROP INDEX contacts_sort_email;
DROP INDEX contacts_sort_phone;
DROP INDEX contacts_sort_company;
DROP INDEX contacts_sort_created;
CREATE INDEX contacts_status_name ON contacts (status, sort_name, id);
-- Also answers lower(email) = x through "AND status = ANY('{active,inactive}')".
CREATE INDEX contacts_status_email ON contacts (status, lower(email), id);
CREATE INDEX contacts_status_phone ON contacts (status, phone, id);
CREATE INDEX contacts_status_company ON contacts (status, lower(company_name), id);
CREATE INDEX contacts_status_created ON contacts (status, created_at, id);

---- create above / drop below ----

DROP INDEX contacts_status_name;
DROP INDEX contacts_status_email;
DROP INDEX contacts_status_phone;
DROP INDEX contacts_status_company;
DROP INDEX contacts_status_created;
CREATE INDEX contacts_sort_name ON contacts (sort_name, id);
CREATE INDEX contacts_sort_email ON contacts (lower(email), id);
CREATE INDEX contacts_sort_phone ON contacts (phone, id);
CREATE INDEX contacts_sort_company ON contacts (lower(company_name), id);
CREATE INDEX contacts_sort_created ON contacts (created_at, id);
