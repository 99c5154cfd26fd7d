-- Indexes matching the list's ORDER BY (listq renders "<expr> <dir> NULLS
-- LAST, d.id <dir>"): a backward scan of an ASC index yields NULLS FIRST,
-- so the descending orders get their own index. Without them, sorting a
-- large table by value or title is a full sort per page.
CREATE INDEX deals_value_asc ON deals (value, id);
CREATE INDEX deals_value_desc ON deals (value DESC NULLS LAST, id DESC);
CREATE INDEX deals_title_asc ON deals (lower(title), id);
CREATE INDEX deals_title_desc ON deals (lower(title) DESC NULLS LAST, id DESC);
CREATE INDEX deals_created_desc ON deals (created_at DESC NULLS LAST, id DESC);
CREATE INDEX deals_close_asc ON deals (expected_close_date, id);

---- create above / drop below ----

DROP INDEX deals_value_asc, deals_value_desc, deals_title_asc, deals_title_desc, deals_created_desc, deals_close_asc;
