-- API keys (AUTH=on). Only a SHA-256 of each key's secret is stored: keys are
-- 256 random bits, so a fast hash is safe and a lookup costs microseconds.
CREATE TABLE api_keys (
  id         text PRIMARY KEY CHECK (id ~ '^[0-9a-f]{12}$'),
  client_id  text NOT NULL REFERENCES clients (id),
  role       text NOT NULL CHECK (role IN ('subscriber', 'publisher', 'admin')),
  hash       bytea NOT NULL CHECK (length(hash) = 32),
  name       text NOT NULL DEFAULT '',
  created_at timestamptz NOT NULL DEFAULT now(),
  revoked_at timestamptz
);

-- Every pod keeps the live keys in memory; a change tells them which to reload,
-- so a revoked key stops working everywhere within milliseconds.
CREATE FUNCTION notify_api_key() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('refdata', 'key:' || CASE WHEN TG_OP = 'DELETE' THEN OLD.id ELSE NEW.id END);
  RETURN NULL;
END $$;

CREATE TRIGGER api_keys_notify AFTER INSERT OR UPDATE OR DELETE ON api_keys FOR EACH ROW EXECUTE FUNCTION notify_api_key();
