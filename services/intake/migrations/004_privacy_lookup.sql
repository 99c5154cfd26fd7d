-- A person's privacy request (export or erasure) finds their submissions
-- by the submitted address, case-insensitively, or by the lead a
-- submission was forwarded as: without these indexes either lookup scans
-- the whole submission log, which grows with every form post.
CREATE INDEX submissions_email_lower ON submissions (lower(email));
CREATE INDEX submissions_lead ON submissions (lead_id) WHERE lead_id IS NOT NULL;

---- create above / drop below ----

DROP INDEX submissions_lead;
DROP INDEX submissions_email_lower;
