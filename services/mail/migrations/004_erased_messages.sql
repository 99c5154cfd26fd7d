-- Messages a person's erasure deleted (privacy requests), named by nothing
-- but the SHA-256 of their Message-ID, so the IMAP sync skips them when it
-- reads a folder again (a new UIDVALIDITY, a mailbox pointed at another
-- server or folder) instead of storing the person's message anew. The hash
-- tells nothing to whoever lacks the message; whoever has it already
-- holds more than the hash.
CREATE TABLE erased_messages (
    message_id_hash bytea       PRIMARY KEY,
    erased_at       timestamptz NOT NULL DEFAULT now()
);

---- create above / drop below ----

DROP TABLE erased_messages;
