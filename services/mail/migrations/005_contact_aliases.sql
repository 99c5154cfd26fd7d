-- The addresses a contact had before a merge joined it with others
-- (mergeapi.Move's emails): mail links a message to a contact by address,
-- so the survivor's e-mails are those of its address and of these. Written
-- only by a merge's move; an erasure deletes the person's.
CREATE TABLE contact_aliases (
    contact_id bigint      NOT NULL,
    address    text        NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (contact_id, address)
);
CREATE INDEX contact_aliases_address ON contact_aliases (address);

---- create above / drop below ----

DROP TABLE contact_aliases;
