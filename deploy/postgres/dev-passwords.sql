-- docker-compose.yml only (dev credentials): each role's password is its
-- name, as in the DATABASE_URLs of the compose file. Never run in production;
-- there the crm-db-bootstrap Job sets the passwords of the crm-db secret.
DO $$
DECLARE s text;
BEGIN
  FOREACH s IN ARRAY ARRAY['identity','contacts','leads','deals','contracts','intake','mail','webhooks'] LOOP
    EXECUTE format('ALTER ROLE %I PASSWORD %L', 'crm_' || s, 'crm_' || s);
  END LOOP;
END $$;
