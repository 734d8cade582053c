/**
 * A record read is one moment of the record. The recorder commits a batch's images and state
 * frames together; a range read whose statements straddled such a commit showed a market's
 * settlement without the image published before it (the state frames read after the commit, the
 * images before it). Here a commit is made to land between the two statements of a read, on a
 * real Postgres written by the real recorder: the answer holds neither of its rows; the next read
 * holds both. A client that hangs up on a record answer stops its read in Postgres.
 */
import t from 'tap';
import { freshDatabase, sqlClient } from '../helpers/db.js';
import { http, startTestService } from '../helpers/service.js';
import { testRecord } from '../helpers/record.js';
import { waitFor } from '../helpers/wait.js';
import { imageOf } from '../helpers/images.js';
import { RecordReader } from '../../src/record/query.js';
import { RecordSnapshots, type RecordDb } from '../../src/record/snapshot.js';

const url = await freshDatabase(t);
const { log, pool } = await testRecord(t, url, { batch: 100 });

const MID = '1.77';
const T = Date.now() - 60_000;
let n = 0;
const odds = (seq: number, price: number) => log.append({
  kind: 'odds', o: { epoch: 'e', seq, publishTime: T + seq, image: imageOf({ mid: MID, ts: T + seq, st: 'OPEN', ip: false, r: [{ rid: 1, st: 'ACTIVE', b: [[price, 10]], l: [] }] }) },
});
const state = (at: number, body: Record<string, unknown>) => log.append({ kind: 'note', note: { topic: 'state', src: 'pa', n: ++n, at, body: { mid: MID, ...body } } });
const recorded = (rows: number) => waitFor(async () => {
  const { rows: [c] } = await pool.query<{ n: number }>('SELECT (SELECT count(*) FROM record_odds) + (SELECT count(*) FROM record_states) AS n');
  return Number(c.n) === rows;
}, `${rows} rows recorded`);

odds(1, 2);
state(T + 2, { op: 'market', s: true, go: false, rt: false });
await recorded(2);

t.test('a commit between two statements of a read is not half seen', async (t) => {
  let statements = 0;
  /** The read's second statement waits until the recorder has committed an image and the settlement after it. */
  const straddled = (db: RecordDb): RecordDb => ({
    query: (async (...args: Parameters<RecordDb['query']>) => {
      if (++statements === 2) {
        odds(3, 2.5);
        state(T + 4, { op: 'result', res: '1', rt: false, ia: false });
        await recorded(4);
      }
      return (db.query as (...a: unknown[]) => Promise<unknown>)(...args);
    }) as RecordDb['query'],
  });
  const snapshots = new RecordSnapshots(pool);
  const page = await snapshots.read((db) => new RecordReader(straddled(db)).changes(MID, T, T + 10, 100));
  t.ok(statements > 2, `the read took ${statements} statements, the commit after its first`);
  t.same(page.changes.map((c) => [c.kind, 'seq' in c ? c.seq : c.at]), [['odds', 1], ['market', T + 2]], 'the read shows the record as it was when it began: no settlement without the image before it');
  const after = await snapshots.read((db) => new RecordReader(db).changes(MID, T, T + 10, 100));
  t.same(after.changes.map((c) => [c.kind, 'seq' in c ? c.seq : c.at]), [['odds', 1], ['market', T + 2], ['odds', 3], ['result', T + 4]], 'the next read shows the commit whole');
});

t.test('a read that fails gives its connection up, and the next read is answered', async (t) => {
  const snapshots = new RecordSnapshots(pool);
  await t.rejects(snapshots.read((db) => db.query('SELECT * FROM no_such_table')), /no_such_table/, 'the failure is the caller\'s');
  const page = await snapshots.read((db) => new RecordReader(db).changes(MID, T, T + 10, 1));
  t.equal(page.changes.length, 1, 'answered on a connection not left mid-transaction');
  t.equal(pool.totalCount - pool.idleCount, 0, 'no connection is held after the reads');
});

t.test('Postgres ends a read\'s connection mid-answer (a restart, a DBA\'s pg_terminate_backend): the read fails, the process lives, the next read is answered', async (t) => {
  const snapshots = new RecordSnapshots(pool);
  let pid = 0;
  const read = snapshots.read(async (db) => {
    ({ rows: [{ pid }] } = await db.query<{ pid: number }>('SELECT pg_backend_pid() AS pid'));
    return db.query('SELECT pg_sleep(30)');
  });
  // Its failure is awaited below, after the backend is ended: held here so it is not taken for unhandled meanwhile.
  const failed = read.then(() => undefined, (err: Error) => err);
  await waitFor(() => pid > 0, 'the read never began');
  const { rows: [{ ended }] } = await pool.query<{ ended: boolean }>('SELECT pg_terminate_backend($1) AS ended', [pid]);
  t.ok(ended, 'its backend was ended');
  t.match((await failed)?.message, /terminat/i, 'the read fails with why');
  const page = await snapshots.read((db) => new RecordReader(db).changes(MID, T, T + 10, 1));
  t.equal(page.changes.length, 1, 'the next read is answered (the process did not die of the lost connection)');
});

t.test('a read\'s connection drops with no word from Postgres (a network cut, a backend killed): the read fails, the process lives', async (t) => {
  const snapshots = new RecordSnapshots(pool);
  let cut = (): void => undefined;
  let asked = false;
  const read = snapshots.read(async (db) => {
    // The socket under the client, as a cut network or a killed backend leaves it: closed, with no error message first.
    cut = () => (db as unknown as { connection: { stream: { destroy(): void } } }).connection.stream.destroy();
    const sleeping = db.query('SELECT pg_sleep(30)');
    asked = true;
    return sleeping;
  });
  await waitFor(() => asked, 'the read never began');
  cut();
  await t.rejects(read, /terminated/i, 'the read fails with why');
  const page = await snapshots.read((db) => new RecordReader(db).changes(MID, T, T + 10, 1));
  t.equal(page.changes.length, 1, 'the next read is answered');
});

t.test('a client that hangs up on a record answer stops its read: the statement under way is cancelled in Postgres, not left to run', async (t) => {
  // A statement timeout of ten minutes: only the cancel can end the read's statement within the test.
  const svc = await startTestService(t, { RECORD: 'on', DEMO_DATA: 'off', PG_STATEMENT_TIMEOUT_MS: '600000' }, url);
  const locker = await sqlClient(t, url);
  // The record's tables held: a read of them waits until they are let go, or its statement is cancelled.
  await locker.query('BEGIN');
  await locker.query('LOCK TABLE record_odds, record_states IN ACCESS EXCLUSIVE MODE');
  const waiting = async () => Number((await pool.query<{ n: number }>(
    `SELECT count(*) AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query ILIKE 'select%' AND pid <> pg_backend_pid()`)).rows[0].n);
  const path = `/api/v1/record/changes?mid=${MID}&from=${T}&to=${T + 10}`;
  const hangUp = new AbortController();
  const asked = fetch(svc.url + path, { signal: hangUp.signal }).then(() => 'answered', () => 'hung up');
  await waitFor(async () => (await waiting()) === 1, 'the record read waiting on the held tables');
  hangUp.abort();
  t.equal(await asked, 'hung up');
  await waitFor(async () => (await waiting()) === 0, 'the hung-up read\'s statement cancelled (its statement timeout is ten minutes)');
  await locker.query('ROLLBACK');
  const next = await http<{ changes: unknown[] }>(svc.url, path);
  t.equal(next.status, 200, 'the next read is answered');
  t.equal(next.body.changes.length, 4, 'whole');
});
