-- The terms a bet is taken and settled under: a market's terms and its runners'
-- (bet delay, each-way terms, reduction factors...), and how a result was
-- settled beyond its REST keys (certainty, dead heats, voids). Every key is
-- nullable: absent means the source did not give it. Wire names as columns.

CREATE TABLE market_terms (
  mid   text PRIMARY KEY REFERENCES markets (mid) ON DELETE CASCADE,
  bd    integer CHECK (bd >= 0),
  tip   boolean,
  sus   timestamptz,
  bt    text CHECK (bt IN ('ODDS', 'LINE', 'RANGE', 'ASIAN_HANDICAP_DOUBLE_LINE', 'ASIAN_HANDICAP_SINGLE_LINE')),
  nw    integer CHECK (nw >= 1),
  ewd   double precision CHECK (ewd > 0),
  bsp   boolean,
  cc    text,
  ven   text,
  race  text,
  mbr   double precision CHECK (mbr >= 0 AND mbr <= 100),
  reg   text[],
  lmin  double precision,
  lmax  double precision,
  lint  double precision CHECK (lint > 0)
);

-- A runner's terms go with the runner: a runner list without it deletes them.
CREATE TABLE runner_terms (
  mid  text   NOT NULL,
  rid  bigint NOT NULL,
  st   text   NOT NULL DEFAULT 'ACTIVE' CHECK (st IN ('ACTIVE', 'REMOVED', 'WINNER', 'LOSER', 'PLACED', 'HIDDEN')),
  af   double precision CHECK (af >= 0 AND af <= 100),
  rd   timestamptz,
  hc   double precision,
  PRIMARY KEY (mid, rid),
  FOREIGN KEY (mid, rid) REFERENCES runners (mid, rid) ON DELETE CASCADE
);

-- Settlement beyond res/rt/ia: provisional or confirmed, when, and each runner's
-- status with its dead-heat share and void factor ([{"rid","st","dh","vf"}]).
ALTER TABLE results
  ADD COLUMN cert text CHECK (cert IN ('provisional', 'confirmed')),
  ADD COLUMN at   timestamptz,
  ADD COLUMN rs   jsonb CHECK (rs IS NULL OR jsonb_typeof(rs) = 'array');

-- Terms reload their market, as its runners do.
CREATE OR REPLACE FUNCTION notify_refdata() RETURNS trigger LANGUAGE plpgsql AS $$
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
    WHEN 'market_terms' THEN 'market:' || (j->>'mid')
    WHEN 'runner_terms' THEN 'runner:' || (j->>'mid')
  END);
  RETURN NULL;
END $$;

CREATE TRIGGER market_terms_notify AFTER INSERT OR UPDATE OR DELETE ON market_terms FOR EACH ROW EXECUTE FUNCTION notify_refdata();
CREATE TRIGGER runner_terms_notify AFTER INSERT OR UPDATE OR DELETE ON runner_terms FOR EACH ROW EXECUTE FUNCTION notify_refdata();
