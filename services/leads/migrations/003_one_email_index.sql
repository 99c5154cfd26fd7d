-- (lower(email), id), the email sort's index, already answers
-- lower(email) = x (CSV duplicate checks, match by email), so the plain
-- lower(email) index only cost every insert one more btree (contacts
-- dropped its twin in its 003).
DROP INDEX leads_email;

---- create above / drop below ----

CREATE INDEX leads_email ON leads (lower(email));
