-- Record history (pkg/history, migrated before this set): every change to
-- a note or a task, listed in its parent's history too (the parent named
-- by parent_type and parent_id); created_by left out (the create's actor
-- says who).
SELECT history_track('notes', 'note', ARRAY['created_by'], '@parent_type', 'parent_id');
SELECT history_track('tasks', 'task', ARRAY['created_by'], '@parent_type', 'parent_id');

---- create above / drop below ----

DROP TRIGGER notes_history_ins ON notes;
DROP TRIGGER notes_history_upd ON notes;
DROP TRIGGER notes_history_del ON notes;
DROP TRIGGER tasks_history_ins ON tasks;
DROP TRIGGER tasks_history_upd ON tasks;
DROP TRIGGER tasks_history_del ON tasks;
