/**
 * How record reads share the pool and hold their connection (snapshot.ts), over a fake pool and a
 * clock the test moves: at most `concurrent` reads hold a connection, one more waits its turn for
 * `waitMs` and is then refused BUSY; an answer is one transaction on one connection, given back
 * clean when it succeeds and never reused when it fails; a connection lost mid-answer is the
 * answer's failure, not the process's. test/record/snapshot-share.test.ts and snapshot.test.ts
 * hold the same against a real Postgres.
 */
import t from 'tap';
import { EventEmitter } from 'node:events';
import type pg from 'pg';
import { RecordSnapshots, type RecordDb } from '../../src/record/snapshot.js';
import { ServiceError } from '../../src/errors.js';
import { FakeClock } from '../helpers/clock.js';

/** A pooled connection as pg hands it out: statements, a release, and 'error' events once checked out. */
class FakeClient extends EventEmitter {
  readonly statements: string[] = [];
  released: 'clean' | 'destroyed' | undefined;
  async query(sql: string): Promise<{ rows: unknown[] }> {
    this.statements.push(sql);
    return { rows: [] };
  }
  release(err?: Error | boolean): void {
    this.released = err ? 'destroyed' : 'clean';
  }
}

class FakePool {
  readonly handed: FakeClient[] = [];
  async connect(): Promise<pg.PoolClient> {
    const c = new FakeClient();
    this.handed.push(c);
    return c as unknown as pg.PoolClient;
  }
}

/** An answer that holds its connection until the test lets it go. */
function held(): { answer: (db: RecordDb) => Promise<string>; go: () => void } {
  let go = (): void => undefined;
  const gate = new Promise<void>((ok) => (go = ok));
  return { answer: async () => { await gate; return 'done'; }, go: () => go() };
}

const turn = () => new Promise((ok) => setImmediate(ok));

t.test('at most `concurrent` reads hold a connection; the next waits its turn, and past waitMs is refused BUSY with Retry-After', async (t) => {
  const pool = new FakePool();
  const clock = new FakeClock();
  const snapshots = new RecordSnapshots(pool, { concurrent: 2, waitMs: 5000 }, clock);
  const [a, b, c, d] = [held(), held(), held(), held()];
  const reads = [snapshots.read(a.answer), snapshots.read(b.answer)];
  await turn();
  t.equal(pool.handed.length, 2, 'two reads hold a connection each');
  const third = snapshots.read(c.answer);
  const fourth = snapshots.read(d.answer).then(() => 'answered', (err: ServiceError) => err);
  await turn();
  t.equal(pool.handed.length, 2, 'the third and fourth wait: no connection taken for them');
  a.go();
  await reads[0];
  await turn();
  t.equal(pool.handed.length, 3, 'one read ended: the first waiting takes its turn');
  clock.advance(5000);
  const refused = await fourth;
  t.ok(refused instanceof ServiceError && refused.code === 'BUSY', `the one still waiting after waitMs is refused BUSY (${String(refused)})`);
  t.same((refused as ServiceError).headers, { 'retry-after': '1' }, 'saying when to try again');
  t.equal(pool.handed.length, 3, 'and took no connection');
  b.go();
  c.go();
  t.same(await Promise.all([reads[1], third]), ['done', 'done'], 'the others are answered');
});

t.test('an answer is one read-only repeatable-read transaction on one connection, given back clean', async (t) => {
  const pool = new FakePool();
  const snapshots = new RecordSnapshots(pool);
  const out = await snapshots.read(async (db) => {
    await db.query('SELECT 1');
    await db.query('SELECT 2');
    return 'both';
  });
  t.equal(out, 'both');
  t.same(pool.handed[0].statements, ['BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY', 'SELECT 1', 'SELECT 2', 'COMMIT'], 'its statements inside one snapshot');
  t.equal(pool.handed[0].released, 'clean', 'its connection back to the pool');
  t.equal(pool.handed[0].listenerCount('error'), 0, 'with no listener of the read left on it');
});

t.test('a connection lost mid-answer fails that answer only: the process lives, the connection is not reused', async (t) => {
  const pool = new FakePool();
  const snapshots = new RecordSnapshots(pool);
  const lost = new Error('Connection terminated unexpectedly');
  const read = snapshots.read((db) => new Promise((_, fail) => {
    // As pg does on a cut, from the socket's own event: the client emits 'error' (thrown out of the
    // event, uncaught, were nothing listening), and the statement under way fails.
    const client = db as unknown as FakeClient;
    setImmediate(() => {
      client.emit('error', lost);
      fail(lost);
    });
  }));
  await t.rejects(read, /terminated unexpectedly/, 'the answer fails with why');
  t.equal(pool.handed[0].released, 'destroyed', 'the connection is destroyed, not handed out again');
  t.equal(pool.handed[0].listenerCount('error'), 0, 'and the read\'s listener is off it');
  t.equal(await snapshots.read(async () => 'next'), 'next', 'the next read is answered');
});
