-- Record history (pkg/history, migrated before this set): every change to
-- a lead, leaving out the columns derived from others (the search text,
-- the assignee's name copied from the user directory, which a rename
-- refreshes without changing the lead) and created_by (the create's actor
-- says who). Its notes and tasks are tracked by activity's migration and
-- listed in the lead's history through their parent.
SELECT history_track('leads', 'lead', ARRAY['search_text', 'assigned_to_name', 'created_by']);

---- create above / drop below ----

DROP TRIGGER leads_history_ins ON leads;
DROP TRIGGER leads_history_upd ON leads;
DROP TRIGGER leads_history_del ON leads;
