-- Reference data of the interface (spec section 2). Keys mirror the wire names'
-- meanings; derived keys (an event's league name, a market's sport, a result's
-- market type) are joined at load time so they can never disagree.

CREATE TABLE sports (
  si     bigint PRIMARY KEY CHECK (si > 0),
  na     text    NOT NULL,
  a      boolean NOT NULL DEFAULT true
);

CREATE TABLE leagues (
  li     bigint PRIMARY KEY CHECK (li > 0),
  si     bigint NOT NULL REFERENCES sports (si),
  na     text   NOT NULL
);

CREATE TABLE events (
  eid    bigint      PRIMARY KEY CHECK (eid > 0),
  si     bigint      NOT NULL REFERENCES sports (si),
  li     bigint      NOT NULL REFERENCES leagues (li),
  na     text        NOT NULL,
  st     timestamptz NOT NULL,
  go     boolean     NOT NULL DEFAULT false,
  ip     boolean     NOT NULL DEFAULT false,
  tv     text
);
CREATE INDEX events_si ON events (si, st, eid);
CREATE INDEX events_li ON events (li);

-- Top-level markets and the nested markets of a player-race share one table, so
-- runners have a single parent key; a nested market has a parent and no type.
CREATE TABLE markets (
  mid        text    PRIMARY KEY CHECK (mid ~ '^[A-Za-z0-9._:-]{1,64}$'),
  parent_mid text    REFERENCES markets (mid) ON DELETE CASCADE,
  pos        integer NOT NULL DEFAULT 0,
  eid        bigint  NOT NULL REFERENCES events (eid),
  na         text,
  ty         text    CHECK (ty IN ('match-odd', 'completed-match', 'tied-match', 'goals', 'super-over',
                                   'bookmaker', 'session', 'other-market', 'odd-even', 'khadometer',
                                   'winner-market', 'line-market', 'bookmaker2', 'ball-by-ball', 'player-race')),
  s          boolean NOT NULL DEFAULT true,
  go         boolean NOT NULL DEFAULT false,
  rt         boolean NOT NULL DEFAULT false,
  has_if     boolean NOT NULL DEFAULT false,
  info       jsonb,
  di         integer,
  bl         double precision,
  has_r      boolean NOT NULL DEFAULT false,
  CHECK ((parent_mid IS NULL) = (ty IS NOT NULL AND na IS NOT NULL)),
  CHECK (bl IS NULL OR ty = 'ball-by-ball'),
  CHECK (parent_mid IS NULL OR parent_mid <> mid),
  CHECK (has_if OR info IS NULL)
);
CREATE INDEX markets_eid ON markets (eid) WHERE parent_mid IS NULL;
CREATE INDEX markets_parent ON markets (parent_mid) WHERE parent_mid IS NOT NULL;

CREATE TABLE runners (
  mid  text    NOT NULL REFERENCES markets (mid) ON DELETE CASCADE,
  rid  bigint  NOT NULL CHECK (rid > 0),
  pos  integer NOT NULL,
  na   text    NOT NULL,
  PRIMARY KEY (mid, rid)
);

CREATE TABLE results (
  mid  text    PRIMARY KEY REFERENCES markets (mid) ON DELETE CASCADE,
  res  text    NOT NULL DEFAULT '',
  rt   boolean NOT NULL DEFAULT false,
  ia   boolean NOT NULL DEFAULT false
);

-- A caller's market set, changed by REST subscribe/unsubscribe. Market IDs are
-- not foreign keys: a client may subscribe to a market before it is listed.
CREATE TABLE clients (
  id         text PRIMARY KEY,
  created_at timestamptz NOT NULL DEFAULT now()
);
INSERT INTO clients (id) VALUES ('public');

CREATE TABLE client_markets (
  client_id text NOT NULL REFERENCES clients (id) ON DELETE CASCADE,
  mid       text NOT NULL CHECK (mid ~ '^[A-Za-z0-9._:-]{1,64}$'),
  PRIMARY KEY (client_id, mid)
);

-- Every committed change tells every pod's read model which rows to reload.
-- Postgres folds identical notifications within a transaction, so a batch of
-- runner rows of one market costs one reload of that market.
CREATE FUNCTION notify_refdata() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  j jsonb := to_jsonb(CASE WHEN TG_OP = 'DELETE' THEN OLD ELSE NEW END);
BEGIN
  PERFORM pg_notify('refdata', CASE TG_TABLE_NAME
    WHEN 'sports'  THEN 'sport:'  || (j->>'si')
    WHEN 'leagues' THEN 'league:' || (j->>'li')
    WHEN 'events'  THEN 'event:'  || (j->>'eid')
    WHEN 'markets' THEN 'market:' || coalesce(j->>'parent_mid', j->>'mid')
    WHEN 'runners' THEN 'runner:' || (j->>'mid')
    WHEN 'results' THEN 'result:' || (j->>'mid')
  END);
  RETURN NULL;
END $$;

CREATE TRIGGER sports_notify  AFTER INSERT OR UPDATE OR DELETE ON sports  FOR EACH ROW EXECUTE FUNCTION notify_refdata();
CREATE TRIGGER leagues_notify AFTER INSERT OR UPDATE OR DELETE ON leagues FOR EACH ROW EXECUTE FUNCTION notify_refdata();
CREATE TRIGGER events_notify  AFTER INSERT OR UPDATE OR DELETE ON events  FOR EACH ROW EXECUTE FUNCTION notify_refdata();
CREATE TRIGGER markets_notify AFTER INSERT OR UPDATE OR DELETE ON markets FOR EACH ROW EXECUTE FUNCTION notify_refdata();
CREATE TRIGGER runners_notify AFTER INSERT OR UPDATE OR DELETE ON runners FOR EACH ROW EXECUTE FUNCTION notify_refdata();
CREATE TRIGGER results_notify AFTER INSERT OR UPDATE OR DELETE ON results FOR EACH ROW EXECUTE FUNCTION notify_refdata();
