-- listq now orders with PostgreSQL's default null placement (ASC NULLS
-- LAST, DESC NULLS FIRST), so a backward scan of one (key, id) index serves
-- both directions: the DESC copies only slowed every write.
DROP INDEX contacts_sort_name_desc;
DROP INDEX contacts_sort_email_desc;
DROP INDEX contacts_sort_phone_desc;
DROP INDEX contacts_sort_company_desc;
DROP INDEX contacts_sort_status_desc;
DROP INDEX contacts_sort_created_desc;
DROP INDEX companies_lower_name_desc;
DROP INDEX companies_created_desc;

---- create above / drop below ----

CREATE INDEX contacts_sort_name_desc ON contacts (sort_name DESC NULLS LAST, id DESC);
CREATE INDEX contacts_sort_email_desc ON contacts (lower(email) DESC NULLS LAST, id DESC);
CREATE INDEX contacts_sort_phone_desc ON contacts (phone DESC NULLS LAST, id DESC);
CREATE INDEX contacts_sort_company_desc ON contacts (lower(company_name) DESC NULLS LAST, id DESC);
CREATE INDEX contacts_sort_status_desc ON contacts (status DESC NULLS LAST, id DESC);
CREATE INDEX contacts_sort_created_desc ON contacts (created_at DESC NULLS LAST, id DESC);
CREATE INDEX companies_lower_name_desc ON companies (lower(name) DESC NULLS LAST, id DESC);
CREATE INDEX companies_created_desc ON companies (created_at DESC NULLS LAST, id DESC);
