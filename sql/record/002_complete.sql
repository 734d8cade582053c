-- How far the record is complete (src/record/recorder.ts, docs/record.md): every entry with a time
-- at or before `at` (ms) that will ever be written has been. Rows reach the recorder out of time
-- order (pods' clocks, the bus, a recorder behind), so a reader paging at the live end stops here:
-- past it a row could still be committed before rows it has read. One row, moved only forward.
CREATE TABLE IF NOT EXISTS record_complete (
  one boolean PRIMARY KEY DEFAULT true CHECK (one),
  at  bigint  NOT NULL
);
INSERT INTO record_complete (one, at) VALUES (true, 0) ON CONFLICT DO NOTHING;

-- A market's changes over a range come in time order, state frames by (at, kind, src, n): an index
-- in that order lets a page read its rows in order and stop, where (mid, kind, at, ...) made
-- Postgres sort every state frame of the range for each page.
CREATE INDEX IF NOT EXISTS record_states_time ON record_states (mid, at, kind, src, n);
