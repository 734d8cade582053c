-- The record (src/record, docs/record.md): what was published, kept by day. Each table is
-- partitioned by the day of its time column (UTC, ms since 1970); the recorder makes each day's
-- partition before writing it and drops whole partitions past RECORD_DAYS.

-- Every odds image, as numbered: a full image (base NULL) or the change from the image with seq
-- `base` of the same market and epoch. The first image of a market in each day is full, so a
-- partition never needs another to be read.
CREATE TABLE IF NOT EXISTS record_odds (
  mid   text   NOT NULL,
  pt    bigint NOT NULL,
  epoch text   NOT NULL,
  seq   bigint NOT NULL,
  ts    bigint NOT NULL,
  base  bigint,
  body  bytea  NOT NULL
) PARTITION BY RANGE (pt);
-- The image a market held at an instant is the newest row at or before it; a row delivered twice is written once.
CREATE UNIQUE INDEX IF NOT EXISTS record_odds_at ON record_odds (mid, pt, epoch, seq);

-- `market`, `result` and `freshness` frames as the recording pod published them, whole (JSON).
CREATE TABLE IF NOT EXISTS record_states (
  mid  text   NOT NULL,
  kind text   NOT NULL,
  at   bigint NOT NULL,
  src  text   NOT NULL,
  n    bigint NOT NULL,
  body jsonb  NOT NULL
) PARTITION BY RANGE (at);
CREATE UNIQUE INDEX IF NOT EXISTS record_states_at ON record_states (mid, kind, at, src, n);

-- Each subscriber socket's ledger: one row per event of its life (open, filter, take, owe, join,
-- behind, live, drop, close), `conn` the pod and the socket's number there, `n` the event's number
-- among its pod's notes.
CREATE TABLE IF NOT EXISTS record_ledger (
  conn text   NOT NULL,
  at   bigint NOT NULL,
  n    bigint NOT NULL,
  op   text   NOT NULL,
  body jsonb  NOT NULL
) PARTITION BY RANGE (at);
CREATE UNIQUE INDEX IF NOT EXISTS record_ledger_conn ON record_ledger (conn, at, n);
CREATE INDEX IF NOT EXISTS record_ledger_opened ON record_ledger (at) WHERE op = 'open';

-- What each conflated variant sent, per pod: its sockets got these images and no others between.
-- `n` numbers it among its pod's notes, ledgers' included, so a send is placed before or after a
-- socket's joining its topic in the same ms; the same image sent twice is two rows.
CREATE TABLE IF NOT EXISTS record_sent (
  src     text   NOT NULL,
  variant text   NOT NULL,
  mid     text   NOT NULL,
  at      bigint NOT NULL,
  n       bigint NOT NULL,
  epoch   text   NOT NULL,
  seq     bigint NOT NULL
) PARTITION BY RANGE (at);
CREATE UNIQUE INDEX IF NOT EXISTS record_sent_at ON record_sent (src, variant, mid, at, n);
