/**
 * A stored change whose base is not in the record (a full image Postgres refused, so the recorder
 * logged it and went on; the changes after it name it). The changes after it up to the next full
 * image cannot be rebuilt. A page of changes tries the chain once, not once per change (each try
 * reads the market's whole day). The answers (a page, a price, a socket's screen) name each lost
 * image (`unreadable`) rather than passing over it, and the export says how many it left out and fails.
 */
import t from 'tap';
import { demoDatabase } from '../helpers/db.js';
import { testRecord } from '../helpers/record.js';
import { loadChecker } from '../docs/schema.js';
import { runTool } from '../cli/processes.js';
import { waitFor } from '../helpers/wait.js';
import { imageOf } from '../helpers/images.js';
import { RecordReader } from '../../src/record/query.js';
import { SocketRecord } from '../../src/record/sockets.js';
import { RecordSnapshots, type RecordDb } from '../../src/record/snapshot.js';

// The demo's reference data: the export writes a market's definition from it.
const url = await demoDatabase(t);
const api = await loadChecker();
const EXPORT = new URL('../../src/cli/export.js', import.meta.url).pathname;
const { log, pool } = await testRecord(t, url);
const snapshots = new RecordSnapshots(pool);

const MID = '1.200001001';
const T = Date.now() - 60_000;
/** Ten runners of three levels a side; only the first runner's best back moves: a change far smaller than the image. */
const runners = (s: number) => Array.from({ length: 10 }, (_, i) => ({
  rid: i + 1, st: 'ACTIVE' as const, b: [[i === 0 ? 2 + s / 100 : 3, 10], [1.9, 20], [1.8, 30]] as [number, number][], l: [[4, 10], [4.1, 20], [4.2, 30]] as [number, number][],
}));
for (let s = 1; s <= 30; s++) {
  log.append({ kind: 'odds', o: { epoch: 'e', seq: s, publishTime: T + s, image: imageOf({ mid: MID, ts: T + s, st: 'OPEN', ip: false, r: runners(s) }) } });
}
// Then a new epoch: its first image is stored whole, so the record is readable again from it.
for (let s = 1; s <= 3; s++) {
  log.append({ kind: 'odds', o: { epoch: 'f', seq: s, publishTime: T + 30 + s, image: imageOf({ mid: MID, ts: T + 30 + s, st: 'OPEN', ip: false, r: runners(s) }) } });
}
await waitFor(async () => (await pool.query(`SELECT 1 FROM record_odds WHERE epoch = 'f' AND seq = 3`)).rowCount === 1, 'the images recorded');
const { rows: [shape] } = await pool.query<{ full: number; changes: number }>('SELECT count(*) FILTER (WHERE base IS NULL) AS full, count(*) FILTER (WHERE base IS NOT NULL) AS changes FROM record_odds');
// The first epoch's full image is lost: as a row Postgres refused would be.
await pool.query(`DELETE FROM record_odds WHERE epoch = 'e' AND seq = 1`);

// In a subtest: an assertion of the root before a later await let tap end the root first, now and then.
t.test('the record held a full image and 29 changes, each from the one before, then a new epoch', async (t) => {
  t.same([Number(shape.full), Number(shape.changes)], [2, 31]);
});

/** Images 2 to 30 of epoch e, as an answer names them when it cannot rebuild them. */
const lost = Array.from({ length: 29 }, (_, i) => ({ kind: 'unreadable', mid: MID, epoch: 'e', seq: i + 2, pt: T + i + 2, ts: T + i + 2 }));

const counted = (db: RecordDb, seen: { statements: number }): RecordDb => ({
  query: ((...args: unknown[]) => {
    seen.statements++;
    return (db.query as (...a: unknown[]) => Promise<unknown>)(...args);
  }) as RecordDb['query'],
});

t.test('a page over a broken chain tries the chain once', async (t) => {
  const seen = { statements: 0 };
  const page = await snapshots.read((db) => new RecordReader(counted(db, seen)).changes(MID, T, T + 100, 100));
  t.same(page.changes.map((c) => c.kind), [...lost.map(() => 'unreadable'), 'odds', 'odds', 'odds'], 'no change of the broken chain can be rebuilt; the new epoch can');
  // Two of them the record's complete mark: whether it is kept (once a process), and where it stands.
  t.ok(seen.statements <= 7, `statements bounded by the broken chains, not the changes in them (${seen.statements})`);
});

t.test('a page names each image the record holds but cannot rebuild, in its place', async (t) => {
  const page = await snapshots.read((db) => new RecordReader(db).changes(MID, T, T + 100, 100));
  t.same(page.changes.slice(0, 29), lost, 'each lost image by its epoch, seq, source and publish time');
  t.match(page.changes.slice(29), [{ kind: 'odds', epoch: 'f', seq: 1 }, { kind: 'odds', epoch: 'f', seq: 2 }, { kind: 'odds', epoch: 'f', seq: 3 }], 'the images after it whole, as before');
  t.same(api.errorsOf('ChangesPage', page), [], 'as docs/openapi.json describes it');
  const paged: unknown[] = [];
  let after: string | undefined;
  for (let i = 0; i < 10; i++) {
    const p = await snapshots.read((db) => new RecordReader(db).changes(MID, T, T + 100, 10, after));
    t.equal(p.changes.length, Math.min(10, 32 - paged.length), 'a page is as long as asked: never silently short');
    paged.push(...p.changes);
    if (!p.next) break;
    after = p.next;
  }
  t.same(paged, page.changes, 'pages of ten are the whole range, each item once');
});

t.test('a price says the image it held is in the record but cannot be rebuilt, not that there was none', async (t) => {
  const price = await snapshots.read((db) => new RecordReader(db).priceAt(MID, T + 30));
  t.equal(price.odds, null);
  t.same(price.unreadable, { mid: MID, epoch: 'e', seq: 30, pt: T + 30, ts: T + 30 }, 'the newest image, named');
  t.same(api.errorsOf('PriceAt', price), [], 'as docs/openapi.json describes it');
  const before = await snapshots.read((db) => new RecordReader(db).priceAt(MID, T));
  t.match(before, { odds: null, unreadable: null }, 'before any image: none, as before');
  const readable = await snapshots.read((db) => new RecordReader(db).priceAt(MID, T + 33));
  t.match(readable, { odds: { epoch: 'f', seq: 3 }, unreadable: null }, 'a readable image: as before');
});

t.test('a socket\'s screen says the image it held is in the record but cannot be rebuilt, not that it held none', async (t) => {
  const how = { variant: 'j0.0', depth: 0, conflate: 0, delta: false };
  let n = 0;
  const ledger = (conn: string, at: number, op: string, body: Record<string, unknown> = {}) =>
    log.append({ kind: 'note', note: { topic: 'ledger', src: 'pa', n: ++n, at, body: { conn, op, ...body } } });
  // pa.1 on the market's topic from its second image; pa.2 too, until it fell behind holding the tenth.
  for (const conn of ['pa.1', 'pa.2']) {
    ledger(conn, T, 'open', { key: 'public', client: 'public', address: '127.0.0.1', format: 'json', hb: 5000 });
    ledger(conn, T + 1, 'take', { ...how, seqs: [[MID, null, null]] });
    ledger(conn, T + 2, 'join', { seqs: [[MID, 'e', 2, true]] });
  }
  ledger('pa.2', T + 10, 'owe', { seqs: [[MID, 'e', 10]] });
  await waitFor(async () => (await pool.query(`SELECT count(*)::int AS c FROM record_ledger`)).rows[0].c === n, 'the ledger recorded');
  const screen = (conn: string, at: number) => snapshots.read((db) => new SocketRecord(db).screen(conn, at));
  const live = await screen('pa.1', T + 30);
  t.match(live.markets, [{ mid: MID, behind: null, odds: null, unreadable: { mid: MID, epoch: 'e', seq: 30, pt: T + 30, ts: T + 30 } }], 'on its topic: the newest image, named');
  t.same(api.errorsOf('Screen', live), [], 'as docs/openapi.json describes it');
  const owed = await screen('pa.2', T + 20);
  t.match(owed.markets, [{ mid: MID, behind: T + 10, odds: null, unreadable: { mid: MID, epoch: 'e', seq: 10, pt: T + 10, ts: T + 10 } }], 'owed: the image it held when it fell behind, named');
  const readable = await screen('pa.1', T + 33);
  t.match(readable.markets, [{ odds: { epoch: 'f', seq: 3 }, unreadable: null }], 'a readable image: as before');
});

t.test('the export writes what it can, says how many images it left out, and fails', async (t) => {
  const r = await runTool(EXPORT, ['--market', MID, '--from', String(T), '--to', String(T + 100)], { DATABASE_URL: url });
  t.equal(r.code, 1, r.stderr);
  t.match(r.stderr, `export: ${MID}: 3 images\n`);
  t.match(r.stderr, `export: ${MID}: 29 images the record holds but cannot rebuild`);
  t.equal(r.stdout.trim().split('\n').length, 3, 'the readable images written');
});
