-- Record history (pkg/history): every change to a contact or a company,
-- leaving out the columns derived from others (sort and search keys, the
-- normalised company name, the contact's copy of its company's name,
-- which the company's own history records) and created_by (the create's
-- actor says who).
SELECT history_track('contacts', 'contact', ARRAY['sort_name', 'search_text', 'company_name', 'created_by']);
SELECT history_track('companies', 'company', ARRAY['name_norm', 'search_text', 'created_by']);

---- create above / drop below ----

DROP TRIGGER contacts_history_ins ON contacts;
DROP TRIGGER contacts_history_upd ON contacts;
DROP TRIGGER contacts_history_del ON contacts;
DROP TRIGGER companies_history_ins ON companies;
DROP TRIGGER companies_history_upd ON companies;
DROP TRIGGER companies_history_del ON companies;
