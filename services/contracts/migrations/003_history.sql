-- Record history (pkg/history, migrated before this set): every change to
-- a contract (object 'contract') or a contract template (object
-- 'template', no parent). Notes and tasks of a contract are tracked by the
-- activity set and listed in the contract's history through their parent.
--
-- Contract columns left out, and why:
--   deal_title, company_name  copies of the deal's title and the company's
--                             name taken at generation (denormalise); the
--                             deal's and the company's own histories
--                             record them. The references (deal_id,
--                             company_id, template_id) are recorded.
--   unresolved_tags           derived from content at each generation: the
--                             content's change says what moved.
--   header_cells,             the template's header and footer resolved for
--   footer_cells              the renderer; not a field of the API's
--                             contract (the template's history records the
--                             cells' source).
--   created_by                the create's actor says who.
-- Recorded: contract_number, title, deal_id, company_id, template_id,
-- status, start_date, end_date, effective_date, termination_date (a
-- renewal moves it), term_months, auto_renew, partner_ref, content (the
-- contract's text, which a PUT or a regeneration rewrites: who changed
-- the wording is what an audit asks) and executed_file, below.
--
-- The signed copy lives in executed_files (metadata) and
-- executed_file_chunks (bytes). Neither is tracked: the chunks are file
-- bytes, and executed_files has no id of its own. Instead the contract
-- carries executed_file, {"filename", "size"} of its copy or NULL, kept by
-- a trigger on executed_files in the statement that writes the copy, so
-- an upload or a deletion is a field change of the contract in its
-- history (executed_file null→{"filename": "signed.pdf", "size": 48213}),
-- with the same who and how as every other change. sha256 (a hash),
-- uploaded_by (the entry's actor) and uploaded_at (the entry's time) are
-- not repeated. The API still reads the copy from executed_files.
--
-- Template columns: all recorded but created_by (the create's actor).
-- number_counters is bookkeeping of the numbering, not a record.
--
-- The render service writes no table of this schema (its results live in
-- Redis under the job's key), so rendering a contract leaves no entry.
ALTER TABLE contracts ADD COLUMN executed_file jsonb;

-- Before tracking: filling the column for existing copies is no change.
UPDATE contracts c SET executed_file = jsonb_build_object('filename', f.filename, 'size', f.size)
FROM executed_files f WHERE f.contract_id = c.id;

CREATE FUNCTION contracts_executed_file() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        UPDATE contracts SET executed_file = NULL WHERE id = OLD.contract_id AND executed_file IS NOT NULL;
    ELSE
        UPDATE contracts SET executed_file = jsonb_build_object('filename', NEW.filename, 'size', NEW.size)
        WHERE id = NEW.contract_id;
    END IF;
    RETURN NULL;
END
$$;
CREATE TRIGGER executed_files_contract AFTER INSERT OR UPDATE OF filename, size OR DELETE ON executed_files
    FOR EACH ROW EXECUTE FUNCTION contracts_executed_file();

SELECT history_track('contracts', 'contract',
    ARRAY['deal_title', 'company_name', 'unresolved_tags', 'header_cells', 'footer_cells', 'created_by']);
SELECT history_track('templates', 'template', ARRAY['created_by']);

---- create above / drop below ----

DROP TRIGGER contracts_history_ins ON contracts;
DROP TRIGGER contracts_history_upd ON contracts;
DROP TRIGGER contracts_history_del ON contracts;
DROP TRIGGER templates_history_ins ON templates;
DROP TRIGGER templates_history_upd ON templates;
DROP TRIGGER templates_history_del ON templates;
DROP TRIGGER executed_files_contract ON executed_files;
DROP FUNCTION contracts_executed_file();
ALTER TABLE contracts DROP COLUMN executed_file;
