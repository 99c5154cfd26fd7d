-- The owner of the mailbox a message was first synced from. Such a message
-- is private to that user and admins unless it is read through a contact or
-- lead it is linked to; a message posted to POST /emails has no owner and
-- every user reads it. The owner is copied, not joined, so deleting the
-- mailbox (mailbox_id becomes null) does not make its mail public.
ALTER TABLE messages ADD COLUMN owner_id bigint;

UPDATE messages m SET owner_id = mb.owner_id FROM mailboxes mb WHERE mb.id = m.mailbox_id;

-- Synced before this migration from a mailbox deleted since: the owner is
-- lost (only POST /emails sets created_by). 0 is no user, so admins only.
UPDATE messages SET owner_id = 0 WHERE owner_id IS NULL AND mailbox_id IS NULL AND created_by IS NULL;

---- create above / drop below ----

ALTER TABLE messages DROP COLUMN owner_id;
