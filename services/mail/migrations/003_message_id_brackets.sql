-- Message ids are kept in RFC 5322 form, "<left@right>" (docs/decisions.md,
-- "Data portability"). Rows stored before were kept without their angle
-- brackets, except one that arrived as "<<x>>" and kept one pair: both
-- "x" and "<x>" become "<x>". Where two rows become one id, the earliest
-- stays (what a repeated POST /emails answered) and takes the others'
-- participants, so no contact or lead loses a linked message.
CREATE TEMP TABLE message_id_fix ON COMMIT DROP AS
SELECT id, new_id, min(id) OVER (PARTITION BY new_id) AS keep
FROM (SELECT id, CASE WHEN message_id LIKE '<%>' THEN message_id ELSE '<' || message_id || '>' END AS new_id
      FROM messages) f;

INSERT INTO participants (message_id, address, role)
SELECT f.keep, p.address, p.role
FROM message_id_fix f JOIN participants p ON p.message_id = f.id
WHERE f.id <> f.keep
ON CONFLICT DO NOTHING;

DELETE FROM messages m USING message_id_fix f WHERE m.id = f.id AND f.id <> f.keep;

UPDATE messages m SET message_id = f.new_id
FROM message_id_fix f WHERE m.id = f.id AND m.message_id <> f.new_id;

---- create above / drop below ----

UPDATE messages SET message_id = substr(message_id, 2, length(message_id) - 2)
WHERE message_id LIKE '<%>'
  AND NOT EXISTS (SELECT 1 FROM messages o WHERE o.message_id = substr(messages.message_id, 2, length(messages.message_id) - 2));
