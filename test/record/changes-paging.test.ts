/**
 * Paging a market's changes with `after`, against a real Postgres written by the real recorder:
 * a cursor names a time and how many changes of that ms were passed, so what a page reads must be
 * bounded by the page and by the changes really recorded in that ms, never by the number the
 * cursor carries; and a cursor never reaches outside the range asked for. Changes of one ms, odds
 * and state frames mixed, are paged without loss or repeat.
 */
import t from 'tap';
import { freshDatabase } from '../helpers/db.js';
import { testRecord } from '../helpers/record.js';
import { waitFor } from '../helpers/wait.js';
import { imageOf } from '../helpers/images.js';
import { RecordReader, type Change } from '../../src/record/query.js';
import { RecordSnapshots, type RecordDb } from '../../src/record/snapshot.js';

const url = await freshDatabase(t);
const { log, pool } = await testRecord(t, url);
const snapshots = new RecordSnapshots(pool);

const MID = '1.88';
const T = Date.now() - 60_000;
let n = 0;
const odds = (seq: number, pt: number, price: number) => log.append({
  kind: 'odds', o: { epoch: 'e', seq, publishTime: pt, image: imageOf({ mid: MID, ts: pt, st: 'OPEN', ip: false, r: [{ rid: 1, st: 'ACTIVE', b: [[price, 10]], l: [] }] }) },
});
const state = (at: number) => log.append({ kind: 'note', note: { topic: 'state', src: 'pa', n: ++n, at, body: { mid: MID, op: 'freshness', live: n % 2 === 0, why: 'source' } } });
const recorded = (rows: number) => waitFor(async () => {
  const { rows: [c] } = await pool.query<{ n: number }>('SELECT (SELECT count(*) FROM record_odds) + (SELECT count(*) FROM record_states) AS n');
  return Number(c.n) === rows;
}, `${rows} rows recorded`);

// Six images and five state frames in the one ms T+1, then forty images a ms apart.
for (let s = 1; s <= 6; s++) odds(s, T + 1, 2 + s / 100);
for (let i = 0; i < 5; i++) state(T + 1);
for (let s = 7; s <= 46; s++) odds(s, T + s, 2 + s / 100);
await recorded(51);

/** A reader whose statements count the rows they fetched. */
const counted = (db: RecordDb, seen: { rows: number; statements: number }): RecordDb => ({
  query: (async (...args: unknown[]) => {
    const out = await (db.query as (...a: unknown[]) => Promise<{ rows: unknown[] }>)(...args);
    seen.statements++;
    seen.rows += out.rows.length;
    return out;
  }) as RecordDb['query'],
});
const key = (c: Change) => ('seq' in c ? `${c.kind} ${c.seq}` : `${c.kind} ${c.at}`);

t.test('pages of one change each walk the ms of many changes without loss or repeat', async (t) => {
  const all = await snapshots.read((db) => new RecordReader(db).changes(MID, T, T + 100, 1000));
  t.equal(all.changes.length, 51);
  const paged: string[] = [];
  let after: string | undefined;
  for (let i = 0; i < 60; i++) {
    const page = await snapshots.read((db) => new RecordReader(db).changes(MID, T, T + 100, 1, after));
    paged.push(...page.changes.map(key));
    if (!page.next) break;
    after = page.next;
  }
  t.same(paged, all.changes.map(key), 'each change once, in the order of the whole');
});

t.test('a cursor whose count passes the changes of its ms reads a page, not the range', async (t) => {
  const seen = { rows: 0, statements: 0 };
  const page = await snapshots.read((db) => new RecordReader(counted(db, seen)).changes(MID, T, T + 100, 1, `${T + 1}.999999`));
  t.same(page.changes.map(key), ['odds 7'], 'the ms passed whole: the page starts after it');
  t.ok(seen.rows <= 2 * 2 + 11, `rows fetched are bounded by the page and the changes of the cursor's ms (fetched ${seen.rows} of 51)`);
});

t.test('a cursor outside the range is refused, never a page from before `from`', async (t) => {
  await t.rejects(snapshots.read((db) => new RecordReader(db).changes(MID, T + 20, T + 100, 10, `${T}.0`)), { code: 'BAD_PARAM' });
  await t.rejects(snapshots.read((db) => new RecordReader(db).changes(MID, T, T + 10, 10, `${T + 20}.0`)), { code: 'BAD_PARAM' });
});

/** Every node type of a plan (EXPLAIN FORMAT JSON). */
const nodes = (plan: { 'Node Type': string; Plans?: unknown[] }): string[] =>
  [plan['Node Type'], ...((plan.Plans ?? []) as (typeof plan)[]).flatMap(nodes)];

t.test("a page reads its range's state frames in index order, never sorting the range", async (t) => {
  const statements: { text: string; values: unknown[] }[] = [];
  const capture = (db: RecordDb): RecordDb => ({
    query: ((text: string, values: unknown[]) => {
      statements.push({ text, values });
      return db.query(text, values);
    }) as RecordDb['query'],
  });
  await snapshots.read((db) => new RecordReader(capture(db)).changes(MID, T, T + 100, 2));
  const states = statements.filter((s) => /FROM record_states\b.*ORDER BY/s.test(s.text));
  t.equal(states.length, 1, 'one statement reads the page\'s state frames');
  const c = await pool.connect();
  try {
    // A few rows would be read whole whatever the indexes; what matters is the order an index gives.
    await c.query('SET enable_seqscan = off');
    const { rows: [plan] } = await c.query<{ 'QUERY PLAN': [{ Plan: { 'Node Type': string } }] }>(`EXPLAIN (FORMAT JSON) ${states[0].text}`, states[0].values);
    const types = nodes(plan['QUERY PLAN'][0].Plan);
    t.notOk(types.includes('Sort') || types.includes('Incremental Sort'), `no sort: ${types.join(' > ')}`);
  } finally {
    await c.query('RESET enable_seqscan');
    c.release();
  }
});
