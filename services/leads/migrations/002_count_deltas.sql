-- The single counter row serialised every insert of a lead behind one row
-- lock (intake at 16 clients ran at one commit at a time). Each statement
-- now appends its delta instead; the total is their sum, and a periodic
-- compaction folds them back into one row.
CREATE TABLE lead_count_deltas (
    id bigserial PRIMARY KEY,
    n  bigint NOT NULL
);
INSERT INTO lead_count_deltas (n) SELECT n FROM lead_count;

CREATE OR REPLACE FUNCTION lead_count_ins() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO lead_count_deltas (n) SELECT count(*) FROM new_rows;
    RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION lead_count_del() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO lead_count_deltas (n) SELECT -count(*) FROM old_rows;
    RETURN NULL;
END $$;

DROP TABLE lead_count;

---- create above / drop below ----

CREATE TABLE lead_count (
    singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    n         bigint  NOT NULL
);
INSERT INTO lead_count (singleton, n) SELECT true, coalesce(sum(n), 0) FROM lead_count_deltas;
CREATE OR REPLACE FUNCTION lead_count_ins() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE lead_count SET n = n + (SELECT count(*) FROM new_rows);
    RETURN NULL;
END $$;
CREATE OR REPLACE FUNCTION lead_count_del() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE lead_count SET n = n - (SELECT count(*) FROM old_rows);
    RETURN NULL;
END $$;
DROP TABLE lead_count_deltas;
