-- The e-mail addresses a contact merge's records had that the survivor no
-- longer holds (the merged contacts' own, the survivor's former one), taken
-- in the local step before the merged rows are deleted, for mail's step
-- (mergeapi.Move.Emails: mail keeps them as the survivor's aliases). Kept
-- only while the merge runs: completing it clears them, so contacts holds
-- no copy of a deleted contact's address after the movers have it.
ALTER TABLE merges ADD COLUMN emails text[] NOT NULL DEFAULT '{}';

---- create above / drop below ----

ALTER TABLE merges DROP COLUMN emails;
