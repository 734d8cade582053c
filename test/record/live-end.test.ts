/**
 * Paging a market's changes at the live end, against a real Postgres written by the real recorder.
 * Rows reach the record out of time order: with NATS several pods append with their own clocks,
 * and a recorder gathers and commits in batches, so a row can be committed after rows later than
 * it. A reader that follows `next` must still get every row once: here it reads the newest rows,
 * then another pod's image published a few ms earlier is committed, and the reader, following
 * `next` until it is null, must be handed it (before the fix its cursor had passed that time and
 * the row was never read).
 */
import t from 'tap';
import { freshDatabase } from '../helpers/db.js';
import { testRecord } from '../helpers/record.js';
import { waitFor } from '../helpers/wait.js';
import { imageOf } from '../helpers/images.js';
import { RecordReader, type Change, type ChangesPage } from '../../src/record/query.js';
import { RecordSnapshots } from '../../src/record/snapshot.js';

const SETTLE_MS = 1000;
const url = await freshDatabase(t);
const { log, pool, metrics } = await testRecord(t, url, { settleMs: SETTLE_MS });
const snapshots = new RecordSnapshots(pool);

const MID = '1.66';
const odds = (epoch: string, seq: number, pt: number) => log.append({
  kind: 'odds', o: { epoch, seq, publishTime: pt, image: imageOf({ mid: MID, ts: pt, st: 'OPEN', ip: false, r: [{ rid: 1, st: 'ACTIVE', b: [[2 + seq / 100, 10]], l: [] }] }) },
});
const recorded = (rows: number) => waitFor(async () => {
  const { rows: [c] } = await pool.query<{ n: number }>('SELECT count(*) AS n FROM record_odds');
  return Number(c.n) === rows;
}, `${rows} rows recorded`);
const key = (c: Change) => ('seq' in c ? `${c.kind} ${c.epoch}/${c.seq}` : `${c.kind} ${c.at}`);
const page = (from: number, to: number, after?: string): Promise<ChangesPage> =>
  snapshots.read((db) => new RecordReader(db).changes(MID, from, to, 2, after));

t.test('a reader following next at the live end gets a row committed late with an earlier time, once', async (t) => {
  const X = Date.now();
  const [from, to] = [X - 5000, X + 200];
  // This pod's images, committed at once.
  for (let s = 1; s <= 3; s++) odds('e', s, X + s);
  await recorded(3);
  const read: string[] = [];
  let first = await page(from, to);
  read.push(...first.changes.map(key));
  t.ok(first.next, 'the range reaches the live end: the first page says where to go on');
  // Another pod's image, published 2 ms before this pod's first, reaches the recorder now.
  odds('f', 1, X - 2);
  await recorded(4);
  let after = first.next;
  await waitFor(async () => {
    if (!after) return true;
    first = await page(from, to, after);
    read.push(...first.changes.map(key));
    after = first.next;
    return !after;
  }, () => `the reader reached the end of the range (read ${read.join(', ')})`, 15_000, 50);
  t.same(read, ['odds f/1', 'odds e/1', 'odds e/2', 'odds e/3'], 'every row once, in time order');
});

t.test('a range well in the past is read to its end at once, next null', async (t) => {
  const T = Date.now() - 60_000;
  odds('g', 1, T);
  odds('g', 2, T + 1);
  await recorded(6);
  const p = await page(T, T + 10);
  t.same(p.changes.map(key), ['odds g/1', 'odds g/2']);
  t.equal(p.next, null, 'the range is done');
  t.ok(p.complete !== null && p.complete >= T + 10, 'the record says it is complete past the range');
});

t.test('an image later than the settling time is written all the same, and counted late', async (t) => {
  const late = async () => (await metrics.late.get()).values[0]?.value ?? 0;
  const T = Date.now() - 30_000;
  await waitFor(async () => ((await page(T, T)).complete ?? 0) > T, 'the mark past the image\'s time');
  // The past range's images above came 60 s late too: counted already.
  const before = await late();
  odds('h', 1, T);
  await recorded(7);
  t.same((await page(T, T)).changes.map(key), ['odds h/1'], 'in the record, where a range read from now on finds it');
  await waitFor(async () => (await late()) === before + 1, 'odds_record_late_total counted it');
});

t.test('a range with its end left out is what the record holds complete now: paged to next null, then done', async (t) => {
  const X = Date.now();
  for (let s = 1; s <= 3; s++) odds('o', s, X + s);
  await recorded(10);
  // The mark past these images, so the open range holds them.
  await waitFor(async () => ((await page(X, X)).complete ?? 0) > X + 3, 'the mark past the images');
  const read: string[] = [];
  let after: string | undefined;
  let pages = 0;
  do {
    const p: ChangesPage = await snapshots.read((db) => new RecordReader(db).changes(MID, X, Date.now() + 60_000, 2, after, true));
    read.push(...p.changes.filter((c) => 'epoch' in c && c.epoch === 'o').map(key));
    after = p.next ?? undefined;
    t.ok(++pages <= 3, 'pages end: the last says next null though the range reached past the mark');
    if (pages > 3) break;
  } while (after);
  t.same(read, ['odds o/1', 'odds o/2', 'odds o/3'], 'everything complete, once');
});
