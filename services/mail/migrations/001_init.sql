-- Connected IMAP mailboxes. The password is sealed with AES-256-GCM under a
-- key derived from CRM_SECRET_KEY; the plaintext never reaches the database.
CREATE TABLE mailboxes (
    id               bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    owner_id         bigint      NOT NULL,
    host             text        NOT NULL,
    port             integer     NOT NULL CHECK (port BETWEEN 1 AND 65535),
    tls              boolean     NOT NULL,
    username         text        NOT NULL,
    password_sealed  bytea       NOT NULL,
    folder           text        NOT NULL DEFAULT 'INBOX',
    status           text        NOT NULL DEFAULT 'pending'
                     CHECK (status IN ('pending', 'ok', 'error')),
    last_error       text,
    last_synced_at   timestamptz,
    -- Incremental sync position: UIDs are only meaningful under one
    -- UIDVALIDITY; when the server changes it, the position resets to 0.
    uidvalidity      bigint      NOT NULL DEFAULT 0,
    last_uid         bigint      NOT NULL DEFAULT 0,
    -- A sync holds the mailbox until this time under its token, so two
    -- workers (replicas, a manual sync racing the scheduler) never sync it
    -- at once, and a sync whose settings changed underneath cannot write
    -- its stale position back.
    sync_lease_until timestamptz,
    sync_token       bigint,
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX mailboxes_owner ON mailboxes (owner_id, id);

-- Synced messages, one row per RFC 5322 Message-ID whichever way it arrived
-- (POST /emails or IMAP), so a message seen by two mailboxes is stored once.
CREATE TABLE messages (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    message_id   text        NOT NULL,
    from_address text        NOT NULL,
    to_addresses text[]      NOT NULL DEFAULT '{}',
    cc_addresses text[]      NOT NULL DEFAULT '{}',
    subject      text        NOT NULL DEFAULT '',
    body_text    text        NOT NULL DEFAULT '',
    snippet      text        NOT NULL DEFAULT '',
    sent_at      timestamptz NOT NULL,
    direction    text        NOT NULL CHECK (direction IN ('inbound', 'outbound')),
    mailbox_id   bigint      REFERENCES mailboxes (id) ON DELETE SET NULL,
    created_by   bigint,
    created_at   timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT messages_message_id_key UNIQUE (message_id)
);
CREATE INDEX messages_sent ON messages (sent_at DESC, id DESC);
CREATE INDEX messages_mailbox ON messages (mailbox_id);

-- Participants normalised for lookup: linking a contact or lead is a read
-- of this index by lower(email), so records created after a message still
-- see it.
CREATE TABLE participants (
    message_id bigint NOT NULL REFERENCES messages (id) ON DELETE CASCADE,
    address    text   NOT NULL CHECK (address = lower(address)),
    role       text   NOT NULL CHECK (role IN ('from', 'to', 'cc')),
    PRIMARY KEY (message_id, address, role)
);
CREATE INDEX participants_address ON participants (address, message_id);

---- create above / drop below ----

DROP TABLE participants;
DROP TABLE messages;
DROP TABLE mailboxes;
