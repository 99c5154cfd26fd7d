-- Record history (pkg/history, migrated before this set): every change to
-- a deal (object 'deal') or a quote (object 'quote', whose parent is its
-- deal: the deal's history lists its quotes' changes too).
--
-- Deal columns left out, and why:
--   company_name        a copy of the company's name, refreshed from
--                       contacts' company events; the company's own history
--                       records a rename (company_id is recorded).
--   company_updated_at  the version that copy was taken from (bookkeeping).
--   created_by          the create's actor says who.
-- Recorded: title, value, currency, stage_id (a move through the pipeline
-- is a stage_id change), status, company_id, contact_id,
-- expected_close_date, assigned_to, source_lead_id and each custom field.
-- status follows the stage's outcome, but it is kept: it changes only with
-- stage_id, in the same statement, and says won or lost even after the
-- stage it was read from is renamed or deleted.
--
-- Quotes: every column is recorded (deal_id, quote_number, status,
-- currency, valid_until, subtotal, tax_rate, tax, total: the totals are
-- the service's rounding of the lines, the figures the customer is quoted).
-- Their lines live in quote_line_items, which has no id of its own and is
-- rewritten whole by an update that sends lines. So the quote carries
-- line_items, its lines as [{"description", "quantity", "unit_price",
-- "amount"}] in position order (numerics as numeric(19,4), exact), which
-- the store writes in the statement that writes the quote's row: one entry
-- per quote write lists its new lines beside its new totals. The API
-- still reads the lines from quote_line_items.
-- quote_counters is the numbering's bookkeeping, not a record.
--
-- Money is numeric(19,4); an entry holds it as stored: a JSON number with
-- its four decimals (1500.50 is 1500.5000), never a float's rounding.
ALTER TABLE quotes ADD COLUMN line_items jsonb NOT NULL DEFAULT '[]';

-- Before tracking: filling the column for existing quotes is no change.
UPDATE quotes q SET line_items = l.items
FROM (
    SELECT quote_id, jsonb_agg(jsonb_build_object('description', description, 'quantity', quantity,
        'unit_price', unit_price, 'amount', amount) ORDER BY position) AS items
    FROM quote_line_items GROUP BY quote_id
) l
WHERE l.quote_id = q.id;

SELECT history_track('deals', 'deal', ARRAY['company_name', 'company_updated_at', 'created_by']);
SELECT history_track('quotes', 'quote', '{}', 'deal', 'deal_id');

---- create above / drop below ----

DROP TRIGGER deals_history_ins ON deals;
DROP TRIGGER deals_history_upd ON deals;
DROP TRIGGER deals_history_del ON deals;
DROP TRIGGER quotes_history_ins ON quotes;
DROP TRIGGER quotes_history_upd ON quotes;
DROP TRIGGER quotes_history_del ON quotes;
ALTER TABLE quotes DROP COLUMN line_items;
