-- A status filter sorted by name or by source walks an index led by
-- status (issue 36). The sort indexes (008) carry status, so the page's
-- walk checks it on the index entries, but it still reads every entry of
-- the other statuses that sorts before the page. At 1,000,000 leads,
-- status=contacted sorted by name skipped the 100,000 leads whose names
-- sort first, none of them contacted (61 ms p95, the one combination of
-- the list over 50 ms); sorted by source it skipped 250,000 to 500,000
-- (165 to 330 ms in psql): a source held by few leads of the status sorts
-- ahead of the rest. Led by status, the walk starts at the status's first
-- key.
--
-- Only these two sorts get one: with each other sort a status's first
-- page skipped at most 20,000 entries (assignee name, descending: 7 to
-- 16 ms), most under 1,500, and each index costs every write of a lead a
-- b-tree entry.
-- The list needs no change: the planner picks these indexes for an
-- equality on status ordered by their key, and the plain sort index for
-- any other filter. They carry what the plain ones do, so the page's ids
-- still come from an index-only walk.
CREATE INDEX leads_status_sort_name ON leads (status, (lower(first_name || ' ' || last_name)), id)
    INCLUDE (source, assigned_to, created_at, enums, first_name, last_name);
CREATE INDEX leads_status_sort_source ON leads (status, (lower(source)), id)
    INCLUDE (source, assigned_to, created_at, enums);

---- create above / drop below ----

DROP INDEX leads_status_sort_source;
DROP INDEX leads_status_sort_name;
