/**
 * The record's days: each row's UTC day names its partition, a write makes a day's partition once
 * (again after a failed write rolled it back), and retention drops whole days past RECORD_DAYS,
 * never today's or a table it did not make. Over a fake connection that answers the catalogue and
 * notes each statement; the same SQL on a real Postgres is test/record/retention's.
 */
import t from 'tap';
import type pg from 'pg';
import { DAY_MS, Partitions, dayOf, partitionDay, partitionName } from '../../src/record/partitions.js';

/** A connection that lists `existing` as the record tables' partitions and notes every statement. */
function fakeClient(existing: string[] = []) {
  const statements: string[] = [];
  const client = {
    async query(sql: string) {
      statements.push(sql.replace(/\s+/g, ' ').trim());
      if (sql.includes('pg_inherits')) return { rows: existing.map((name) => ({ name })) };
      return { rows: [] };
    },
  };
  return { client: client as unknown as pg.ClientBase, statements };
}

const day = (iso: string): number => dayOf(Date.parse(iso));

t.test('a row\'s partition is its UTC day, named YYYYMMDD; the name reads back to the same day', async (t) => {
  const lastMs = Date.parse('2026-11-25T23:59:59.999Z');
  t.equal(partitionName('record_odds', dayOf(lastMs)), 'record_odds_p20261125', 'the last millisecond of a UTC day is that day');
  t.equal(partitionName('record_odds', dayOf(lastMs + 1)), 'record_odds_p20261126', 'the next millisecond is the next day');
  t.equal(partitionDay('record_sent_p20261126'), dayOf(lastMs + 1), 'the name gives its day back');
  t.equal(partitionDay('record_odds_p20240229'), day('2024-02-29T12:00:00Z'), 'a leap day');
  t.equal(partitionDay('record_odds_old'), undefined, 'a table not named here has no day');
});

t.test('a write makes each day\'s partition once, with that day\'s bounds; after a failed write it asks again', async (t) => {
  const p = new Partitions();
  const { client, statements } = fakeClient();
  const today = day('2026-11-25T10:00:00Z');
  await p.ensure(client, 'record_odds', [today, today - 1]);
  t.same(statements, [
    `CREATE TABLE IF NOT EXISTS record_odds_p20261125 PARTITION OF record_odds FOR VALUES FROM (${today * DAY_MS}) TO (${(today + 1) * DAY_MS})`,
    `CREATE TABLE IF NOT EXISTS record_odds_p20261124 PARTITION OF record_odds FOR VALUES FROM (${(today - 1) * DAY_MS}) TO (${today * DAY_MS})`,
  ], 'one statement a day, bounded by its first millisecond and the next day\'s');
  await p.ensure(client, 'record_odds', [today]);
  await p.ensure(client, 'record_odds', [today - 1]);
  t.equal(statements.length, 2, 'a day already made costs no statement');
  await p.ensure(client, 'record_states', [today]);
  t.equal(statements.length, 3, 'each table has its own');
  p.forget();
  await p.ensure(client, 'record_odds', [today]);
  t.equal(statements.length, 4, 'after a failed write (its partitions rolled back with it) the day is made again');
});

t.test('retention drops every table\'s days before today less RECORD_DAYS, keeps the rest and what it did not name, and makes a dropped day again on demand', async (t) => {
  const now = Date.parse('2026-11-25T00:00:01Z');
  const existing = [
    'record_odds_p20261125', 'record_odds_p20261118', 'record_odds_p20261117', 'record_odds_p20261001',
    'record_ledger_p20261117', 'record_sent_p20261118', 'record_odds_manual',
  ];
  const p = new Partitions();
  const { client, statements } = fakeClient(existing);
  await p.ensure(client, 'record_odds', [day('2026-11-17T12:00:00Z')]);
  const dropped = await p.retain(client, 7, now);
  t.same(dropped, ['record_ledger_p20261117', 'record_odds_p20261001', 'record_odds_p20261117'], 'the days before 18 Nov (today, 25 Nov, less 7 days), sorted');
  t.same(statements.filter((s) => s.startsWith('DROP')).sort(), dropped.map((n) => `DROP TABLE IF EXISTS ${n}`), 'dropped whole, never deleted row by row');
  const before = statements.length;
  await p.ensure(client, 'record_odds', [day('2026-11-17T12:00:00Z')]);
  t.equal(statements.length, before + 1, 'a late row for a dropped day makes its partition again rather than fail');
});
