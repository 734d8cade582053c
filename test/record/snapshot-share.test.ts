/**
 * The record's reads share the service's pool (no RECORD_DATABASE_URL) and each answer holds one
 * connection for all its statements, however long (a socket's screen is several statements a
 * market). Slow record reads must leave the rest of the service connections: past their share
 * they wait for a turn, and past the wait they are refused BUSY, never holding the pool.
 */
import t from 'tap';
import { freshDatabase } from '../helpers/db.js';
import { waitFor } from '../helpers/wait.js';
import { loadConfig } from '../../src/config.js';
import { createLogger } from '../../src/log.js';
import { createPool } from '../../src/db/pool.js';
import { RecordSnapshots, type RecordDb } from '../../src/record/snapshot.js';

const url = await freshDatabase(t);
// A connect timeout no busy machine reaches: the tests watch who waits for a connection, not how long.
const pool = createPool(url, loadConfig({ PG_POOL_MAX: '4', PG_CONNECT_TIMEOUT_MS: '60000' }), createLogger('error', false));
t.teardown(() => pool.end());

/** A read that holds its connection until `open` is called: a slow answer. */
function gate() {
  let open!: () => void;
  const opened = new Promise<void>((r) => (open = r));
  let started = 0;
  const answer = async (db: RecordDb) => {
    started++;
    await opened;
    return (await db.query<{ one: number }>('SELECT 1 AS one')).rows[0].one;
  };
  return { open, answer, started: () => started };
}

t.test('slow record reads unbounded take the whole pool: the rest of the service waits for a connection', async (t) => {
  const g = gate();
  const reads = Array.from({ length: 4 }, () => new RecordSnapshots(pool).read(g.answer));
  await waitFor(() => g.started() === 4, 'four reads holding their connections');
  // A subscribe's statement: it waits for a connection (and, past PG_CONNECT_TIMEOUT_MS, fails).
  const subscribe = pool.query<{ one: number }>('SELECT 1 AS one');
  await waitFor(() => pool.waitingCount === 1, 'the service\'s statement waiting for a connection');
  t.equal(pool.idleCount, 0, 'every connection is held by a record read');
  g.open();
  t.same(await Promise.all(reads), [1, 1, 1, 1]);
  t.equal((await subscribe).rows[0].one, 1, 'the service\'s statement ran only once the reads let go');
});

t.test('with a share, the service keeps its connections; reads past it wait their turn or are refused BUSY', async (t) => {
  const g = gate();
  const snapshots = new RecordSnapshots(pool, { concurrent: 1, waitMs: 60_000 });
  const reads = Array.from({ length: 4 }, () => snapshots.read(g.answer));
  await waitFor(() => g.started() === 1, 'the first read holding its connection');
  t.equal((await pool.query<{ one: number }>('SELECT 1 AS one')).rows[0].one, 1, 'the service\'s own statements are answered meanwhile');
  t.equal(g.started(), 1, 'one read at a time holds a connection');
  g.open();
  t.same(await Promise.all(reads), [1, 1, 1, 1], 'the reads that waited are answered in turn');
  t.equal(pool.totalCount - pool.idleCount, 0, 'no connection is held after the reads');

  const slow = gate();
  const short = new RecordSnapshots(pool, { concurrent: 1, waitMs: 50 });
  const first = short.read(slow.answer);
  await t.rejects(short.read(slow.answer), { code: 'BUSY' }, 'a read that finds no turn within its wait is refused');
  slow.open();
  t.equal(await first, 1);
  t.equal(await short.read(slow.answer), 1, 'and the next read has its turn');
});
